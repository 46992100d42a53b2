"""The evaluation and benchmark commands of `paperhouse` (`make eval`, `make bench`): `eval-dedup`,
`eval-terms`, `eval-real`, `synth` and `bench`. Each command imports its evaluation module when it
runs, so the rest of the command line (and a run) never loads them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from paperhouse.settings import BUNDLED_SEEDS, variable


def fail(message: str, code: int = 1) -> int:
    print(f"paperhouse: {message}", file=sys.stderr)
    return code


def bench(argv: list[str]) -> int:
    """`paperhouse bench`: its own parser (``paperhouse.evaluation.bench``), as it runs itself in child processes."""
    from paperhouse.evaluation.bench import main

    return main(argv)


def cmd_eval_dedup(args: argparse.Namespace) -> int:
    from paperhouse.evaluation import dedup as evaluation

    if args.write_set:
        print(f"wrote {evaluation.write_eval_set()}")
    report = evaluation.evaluate(evaluation.load_eval_set())
    print(evaluation.format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report.as_dict(), indent=2))
    return 0 if report.meets_targets else fail("dedup evaluation targets not met")


def cmd_eval_terms(args: argparse.Namespace) -> int:
    from paperhouse.evaluation import gold_terms as term_evaluation

    report = term_evaluation.quality_report()
    print(term_evaluation.format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0 if all(term_evaluation.targets_met(report).values()) else fail("term quality targets not met")


def cmd_eval_real(args: argparse.Namespace) -> int:
    from paperhouse.evaluation import real_data
    from paperhouse.evaluation import real_lists as real_evaluation

    if not real_data.available():
        return fail(f"no real lists at {real_data.realdata_dir()} (set {variable('realdata')})")
    report = real_evaluation.real_data_report(tuple(args.half or real_data.HALVES), growth=not args.half)
    print(real_evaluation.format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    if "report" not in report:
        return 0
    met = all(real_evaluation.targets_met(report["report"]).values()) and real_evaluation.topics_grow(report)
    return 0 if met else fail("real-data targets not met on the held-out half")


def cmd_synth(args: argparse.Namespace) -> int:
    from paperhouse.evaluation.synth import write_corpus
    from paperhouse.ingest.parse_cache import read_abstracts

    labels = write_corpus(
        read_abstracts(BUNDLED_SEEDS),
        args.papers,
        Path(args.out),
        per_file=args.per_file,
        duplicate_share=args.duplicate_share,
        seed=args.seed,
    )
    print(f"wrote {args.papers} abstracts to {args.out} (labels: {labels})")
    return 0


def add_evaluation_commands(commands) -> None:
    """Add the commands to ``commands``, what ``ArgumentParser.add_subparsers()`` returned."""
    evaluate = commands.add_parser("eval-dedup", help="print precision and recall of dedup on the evaluation set")
    evaluate.add_argument(
        "--write-set", action="store_true", help="regenerate the evaluation set (gold/dedup_eval_set.jsonl) first"
    )
    evaluate.add_argument("--json", help="also write the report as JSON to this file")
    evaluate.set_defaults(handler=cmd_eval_dedup)

    evaluate_terms = commands.add_parser(
        "eval-terms", help="keyphrase F1, method-name precision and topic coherence beside baselines, on the gold sets"
    )
    evaluate_terms.add_argument("--json", help="also write the report to this file")
    evaluate_terms.set_defaults(handler=cmd_eval_terms)

    evaluate_real = commands.add_parser(
        "eval-real",
        help="terms, topics, similar papers and names on the real lists in ../shared/realdata, beside baselines",
    )
    evaluate_real.add_argument("--json", help="also write the report to this file")
    evaluate_real.add_argument(
        "--half",
        action="append",
        choices=("tune", "report"),
        help="only this half (repeatable; default both): 'tune' while tuning",
    )
    evaluate_real.set_defaults(handler=cmd_eval_real)

    synth = commands.add_parser("synth", help="write synthetic abstract lists with labelled duplicates")
    synth.add_argument("--papers", type=int, required=True)
    synth.add_argument("--out", required=True)
    synth.add_argument("--per-file", type=int, default=10_000, help="abstracts per list file")
    synth.add_argument("--duplicate-share", type=float, default=0.1)
    synth.add_argument("--seed", type=int, default=0)
    synth.set_defaults(handler=cmd_synth)

    commands.add_parser("bench", help="the whole pipeline at 10k and 100k abstracts beside baselines (see --help)")
