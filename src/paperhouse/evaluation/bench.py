"""`make bench`: the whole pipeline at 10k and 100k synthetic abstracts (1M with --million), beside baselines.

For each size, a synthetic corpus with labelled duplicates (``paperhouse.evaluation.synth``) is written
once. Then, each in a fresh process so its peak memory is its own, on the same files:

- ``pipeline``: ``paperhouse run`` from scratch (every asset, dbt model and check, then
  publish), recorded in a Dagster instance as `make run` records it, with each Dagster step's
  wall time, and dedup precision and recall over record pairs against the labels;
- ``read_text``: DuckDB reading every file with ``read_text``, the floor for ingestion;
- ``datasketch``: ``MinHashLSH`` (same normalised words, same word 3-shingles, 128
  permutations, threshold 0.5), the baseline for dedup;
- ``sklearn``: ``TfidfVectorizer`` (1-3-grams, English stop words) and NMF at the number of
  topics paperhouse chose, the baseline for terms and topics;
- ``nlp``: paperhouse's terms, topics and similar papers timed apart on the records, and the
  recall of the neighbour search against exact search.

Each stage is reported beside its baseline as a ratio, with the targets; JSON goes to
``data/bench/bench.json``. The bundled seeds are also built twice, the second time warm.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from paperhouse.engines import DEFAULT_ENGINE, ENGINES
from paperhouse.evaluation.bench_methods import (
    STAGES,
    run_datasketch,
    run_nlp,
    run_pipeline,
    run_read_text,
    run_script,
    run_sklearn,
)
from paperhouse.evaluation.bench_report import finished, growth_exponents, report
from paperhouse.evaluation.synth import labels_path
from paperhouse.settings import BUNDLED_SEEDS, DAGSTER_YAML, settings, variable
from paperhouse.warehouse.database import connect

# Variables the measured child processes get on top of this one's (``main``'s options).
CHILD_ENVIRONMENT: dict[str, str] = {}
DATA = Path("data") / "bench"  # in the working folder, as the warehouse is
SIZES = (10_000, 100_000)
MILLION = 1_000_000
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
# Builds of the seeds from scratch judged by their median: one build's time varies by 10-15%
# from one quarter of an hour to the next on the 2-core VMs this runs on.
FRESH_BUILDS = 3
CALIBRATION_LOOP = 20_000_000
# A baseline may run for 1.5 times the 10^6 target before it is stopped and reported as not
# finishing: scikit-learn's NMF over 10^6 abstracts was still iterating after 28 minutes.
BASELINE_SECONDS_LIMIT = 900
PREPARE_MEMORY_LIMIT = "8GB"


def prepare(n_papers: int) -> Path:
    """Synthetic lists for ``n_papers`` abstracts and a parquet of their accepted records."""
    from paperhouse.evaluation.synth import write_corpus
    from paperhouse.ingest.parse_cache import ingest, read_abstracts

    folder = DATA / f"synth_{n_papers}"
    records = folder / "records.parquet"
    if not (records.exists() and labels_path(folder / "lists").exists()):
        shutil.rmtree(folder, ignore_errors=True)  # a corpus cached before the labels moved out of the lists
        write_corpus(read_abstracts(BUNDLED_SEEDS), n_papers, folder / "lists")
        # Parsed into a scratch file, not in memory: a million records in memory peaked at 18 GB.
        # Under a memory limit of its own, as no stage measured: ordering a million records' texts
        # (1.5 GB) for the parquet ran out of the warehouse's 2 GB.
        scratch = folder / "parse.duckdb"
        with connect(scratch, config={"memory_limit": PREPARE_MEMORY_LIMIT}) as con:
            ingest(con, folder / "lists")
            con.sql(
                "select source_file, record_no, text, normalized_text from raw.source_records"
                " where reject_reason is null order by source_file, record_no"
            ).write_parquet(str(records))
        scratch.unlink()
    return folder


class MeasureFailed(RuntimeError):
    """A measured process did not finish: it failed, its processes outgrew the memory cap, or it
    ran past its time limit."""

    def __init__(self, reason: str, seconds: float, peak_rss_mb: int) -> None:
        super().__init__(reason)
        self.outcome = {"failed": reason, "seconds": seconds, "peak_rss_mb": peak_rss_mb}


def memory_cap_kb() -> int:
    """What a measured run may hold, all its processes together: the machine's memory but 2 GiB,
    so a run that does not fit is stopped and reported instead of thrashing the machine."""
    return os.sysconf("SC_PHYS_PAGES") * _PAGE_KB - (2 << 20)


def _measure(
    method: str, folder: Path, *extra: str, cap_kb: int | None = None, seconds_limit: float | None = None
) -> dict:
    """Run one method in a fresh Python, so its peak RSS is its own: the largest of its processes
    (``peak_process_rss_mb``) and, sampled, the sum over it and its children (dbt, the GX worker).
    ``MeasureFailed`` when it fails, its processes pass ``cap_kb`` (default ``memory_cap_kb()``),
    or it is still running after ``seconds_limit`` (default: no limit)."""
    env = _child_environment()
    started = time.perf_counter()
    cap_kb = cap_kb or memory_cap_kb()
    with subprocess.Popen(
        [sys.executable, "-m", "paperhouse.evaluation.bench", "--run", method, "--folder", str(folder), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as child:
        watcher = threading.Thread(
            target=_watch_tree, args=(child, peak := [0], stopped := [], cap_kb, started, seconds_limit), daemon=True
        )
        watcher.start()
        stdout, stderr = child.communicate()
        watcher.join()
    seconds, peak_mb = time.perf_counter() - started, round(peak[0] / 1024)
    if stopped:
        raise MeasureFailed(f"stopped after {seconds:.0f} s: {stopped[0]}", seconds, peak_mb)
    if child.returncode:
        raise MeasureFailed(f"exit {child.returncode}: {stderr.strip()[-3000:]}", seconds, peak_mb)
    result = json.loads(stdout.strip().splitlines()[-1])
    return result | {
        "process_seconds": seconds,
        "peak_process_rss_mb": result["peak_rss_mb"],
        "peak_rss_mb": max(result["peak_rss_mb"], peak_mb),
    }


def _child_environment() -> dict[str, str]:
    """A measured process's environment: the bench's Dagster instance and the bench's options."""
    return os.environ | {"DAGSTER_HOME": str(instance_home())} | CHILD_ENVIRONMENT


def instance_home() -> Path:
    """The bench's own Dagster home, configured by the project's dagster.yaml: its runs are
    recorded, and pay for it, as `make run`'s are, outside the history the UI shows."""
    home = DATA.absolute() / "dagster_home"  # Dagster takes only an absolute DAGSTER_HOME
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").is_symlink():
        (home / "dagster.yaml").symlink_to(DAGSTER_YAML)
    return home


def _watch_tree(
    child: subprocess.Popen,
    peak: list[int],
    stopped: list[str],
    cap_kb: int,
    started: float,
    seconds_limit: float | None,
    every: float = 0.2,
) -> None:
    """Sample the resident memory of ``child`` and its descendants into ``peak[0]`` until it ends;
    kill them all once they pass ``cap_kb`` or run past ``seconds_limit``, saying why in ``stopped``."""
    while child.poll() is None:
        peak[0] = max(peak[0], tree_rss_kb(child.pid))
        if peak[0] > cap_kb:
            stopped.append(f"its processes passed {cap_kb >> 10} MB")
        elif seconds_limit and time.perf_counter() - started > seconds_limit:
            stopped.append(f"past its limit of {seconds_limit:.0f} s")
        if stopped:
            for process in process_tree(child.pid):  # the run and its dbt and GX processes
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process, signal.SIGKILL)
            return
        time.sleep(every)


def process_tree(pid: int) -> list[int]:
    """A process and all its descendants (Linux /proc); empty once gone."""
    tree, pending = [], [pid]
    while pending:
        process = pending.pop()
        try:
            tasks = list((Path("/proc") / str(process) / "task").iterdir())
            pending += [int(child) for task in tasks for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):  # it ended while being read
            continue
        tree.append(process)
    return tree


def tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants, in KiB; 0 once gone."""
    total = 0
    for process in process_tree(pid):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # it ended since
            total += int((Path("/proc") / str(process) / "statm").read_text().split()[1]) * _PAGE_KB
    return total


def _measure_pipeline(lists: Path, warehouse: Path, engine: str = "duckdb") -> dict:
    return _measure("pipeline", lists, "--warehouse", str(warehouse), "--engine", engine)


def _child(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    if args.run == "pipeline":
        result = run_pipeline(folder, Path(args.warehouse), engine=args.engine)
    elif args.run == "sklearn":
        result = run_sklearn(folder, args.topics)
    elif args.run == "script":
        result = run_script(folder, args.topics)
    else:
        result = {"read_text": run_read_text, "datasketch": run_datasketch, "nlp": run_nlp}[args.run](folder)
    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(json.dumps(result | {"peak_rss_mb": round(peak / 1024)}))
    gc.freeze()  # as the `paperhouse` command ends (see paperhouse.cli.console)
    return 0


def bench_size(size: int, engines: tuple[str, ...] = ()) -> dict:
    """The pipeline and its baselines at ``size`` abstracts; only ``failed`` and what was measured
    when the pipeline does not finish (or outgrows the machine), as the baselines compare to it.
    ``engines``: other engines whose whole run is measured beside the default's (``engines``)."""
    folder = prepare(size)
    others = {}
    for engine in engines:  # each from scratch, in a warehouse folder of its own
        warehouse = folder / f"warehouse-{engine}"
        shutil.rmtree(warehouse, ignore_errors=True)
        others[engine] = measure_engine(folder / "lists", warehouse / "paperhouse.duckdb", engine)
    shutil.rmtree(folder / "warehouse", ignore_errors=True)  # a build from scratch, every time
    try:
        pipeline = _measure_pipeline(folder / "lists", folder / "warehouse" / "paperhouse.duckdb")
    except MeasureFailed as failure:
        return {"abstracts": size, "pipeline": failure.outcome, "engines": others}
    if not pipeline["success"]:
        return {"abstracts": size, "pipeline": pipeline | {"failed": pipeline["reason"]}, "engines": others}
    baselines = {
        "read_text": _measure_baseline("read_text", folder),
        "datasketch": _measure_baseline("datasketch", folder),
        "sklearn": _measure_baseline("sklearn", folder, "--topics", str(pipeline["topics"])),
        "script": _measure_baseline("script", folder, "--topics", str(pipeline["topics"])),
    }
    nlp = _measure_baseline("nlp", folder)
    stages = {
        stage: {
            "seconds": pipeline["steps"].get(step, 0.0),
            "baseline": baseline,
            "baseline_seconds": baselines[baseline]["seconds"],
            "ratio": None
            if "failed" in baselines[baseline]
            else pipeline["steps"].get(step, 0.0) / max(baselines[baseline]["seconds"], 1e-9),
        }
        for stage, (step, baseline) in STAGES.items()
    }
    return {
        "abstracts": size,
        "pipeline": pipeline,
        "baselines": baselines,
        "stages": stages,
        "nlp": nlp,
        "engines": others,
    }


def measure_engine(lists: Path, warehouse: Path, engine: str) -> dict:
    """A whole run of ``engine`` building ``lists`` into ``warehouse``, measured as the bench measures
    the default engine's (a fresh process: its time, steps and peak RSS; papers and topics; dedup
    precision and recall when the lists carry labels), or ``failed`` and what was measured."""
    try:
        return _measure_pipeline(lists, warehouse, engine=engine)
    except MeasureFailed as failure:
        return failure.outcome


def _measure_baseline(method: str, folder: Path, *extra: str) -> dict:
    """``_measure`` within ``BASELINE_SECONDS_LIMIT``, or, for a baseline that does not finish
    (datasketch's index of a million abstracts outgrows the machine, scikit-learn's NMF outlasts the
    limit), ``failed`` and what was measured: the size's other figures stand."""
    try:
        return _measure(method, folder, *extra, seconds_limit=BASELINE_SECONDS_LIMIT)
    except MeasureFailed as failure:
        return failure.outcome


def python_loop_seconds() -> float:
    """How long this machine takes over a fixed pure-Python loop. One VM of this kind took 0.64 s
    before a `make bench` and 0.93 s after it, 15 minutes later: every figure moves with it."""
    started = time.perf_counter()
    total = 0
    for number in range(CALIBRATION_LOOP):
        total += number
    return time.perf_counter() - started


def bench_seeds() -> dict:
    """The bundled seeds: a first build (cold imports), builds from scratch once warm (the one of
    median process time, with every build's time as ``samples``), then two `paperhouse run`
    commands on the unchanged folder: the first builds it again through Dagster (no command has
    recorded these inputs yet: the builds measured before are Dagster runs alone), the second is
    up to date."""
    warehouse = DATA / "seeds" / "paperhouse.duckdb"

    def from_scratch() -> dict:
        shutil.rmtree(warehouse.parent, ignore_errors=True)
        return _measure_pipeline(BUNDLED_SEEDS, warehouse)

    first = from_scratch()
    fresh = sorted((from_scratch() for _ in range(FRESH_BUILDS)), key=lambda run: run["process_seconds"])
    median = fresh[len(fresh) // 2] | {"samples": [run["process_seconds"] for run in fresh]}
    rebuild = measure_command(BUNDLED_SEEDS, warehouse)
    return {"first": first, "fresh": median, "rebuild": rebuild, "rerun": measure_command(BUNDLED_SEEDS, warehouse)}


def measure_command(lists: Path, warehouse: Path) -> dict:
    """`paperhouse run` as a user runs it, a process of its own: its wall time, and whether it found
    the warehouse up to date (then it started no Dagster run)."""
    env = _child_environment()
    command = [sys.executable, "-m", "paperhouse.cli", "run", "--seeds", str(lists), "--warehouse", str(warehouse)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise MeasureFailed(f"exit {done.returncode}: {done.stderr.strip()[-3000:]}", seconds, 0)
    up_to_date = done.stdout.startswith("paperhouse run: up to date")
    return {
        "seconds": 0.0 if up_to_date else seconds,
        "process_seconds": seconds,
        "steps": {},
        "up_to_date": up_to_date,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paperhouse bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated corpus sizes")
    parser.add_argument("--million", action="store_true", help=f"also {MILLION:,} abstracts (long)")
    parser.add_argument("--out", default=str(DATA / "bench.json"))
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--topics", type=int, default=10, help=argparse.SUPPRESS)
    parser.add_argument("--warehouse", help=argparse.SUPPRESS)
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=DEFAULT_ENGINE,
        help="also measure this engine's whole run at each size, beside the default's (spark: docs/spark.md)",
    )
    parser.add_argument(
        "--keyphrase-embeddings",
        action="store_true",
        help=f"measure runs that rank keyphrases with embeddings too (their ${variable('keyphrase_embeddings')}=1)",
    )
    args = parser.parse_args(argv)
    if args.keyphrase_embeddings:  # the measured runs are child processes: they read it there
        CHILD_ENVIRONMENT[variable("keyphrase_embeddings")] = "1"
    embeddings = settings().keyphrase_embeddings or args.keyphrase_embeddings
    if args.run:  # the child process of _measure
        return _child(args)

    sizes = [int(s) for s in args.sizes.split(",")] + ([MILLION] if args.million else [])
    shutil.rmtree(instance_home())  # every bench starts from an empty run history
    machine_speed = [python_loop_seconds()]
    seeds = bench_seeds()
    results = []
    for size in sizes:
        print(f"benchmarking {size:,} abstracts ...", flush=True)
        results.append(bench_size(size, () if args.engine == DEFAULT_ENGINE else (args.engine,)))
    machine_speed.append(python_loop_seconds())
    targets = report(results, seeds)
    print(
        f"machine speed: a fixed loop of {CALIBRATION_LOOP:,} Python additions took "
        + " s, then ".join(f"{t:.2f}" for t in machine_speed)
        + " s (before and after; compare runs by it)"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "sizes": results,
                "seeds": seeds,
                "targets": dict(targets),
                "python_loop_seconds": machine_speed,
                "keyphrase_embeddings": embeddings,
            }
            | growth_exponents(finished(results), seeds),
            indent=2,
        )
    )
    if embeddings:
        print("every run ranked keyphrases with embeddings (--keyphrase-embeddings)")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
