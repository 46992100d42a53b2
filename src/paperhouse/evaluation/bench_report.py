"""The bench's report: its tables, how end-to-end time grows with the corpus, and the targets met."""

from __future__ import annotations

import math

from paperhouse.evaluation.bench_methods import STAGES

TARGETS = {  # abstracts -> (seconds end to end, peak RSS in MB)
    100_000: (60, None),
    1_000_000: (600, 6 * 1024),
}
TARGET_NLP_SECONDS_100K = 60
# Issue 54: the whole `paperhouse run` process against the plain script a user would write instead.
TARGET_SCRIPT_RATIO_100K = 0.8
TARGET_SEEDS_WARM_SECONDS = 8
TARGET_SEEDS_RERUN_SECONDS = 4
_LABEL_WIDTH = max(len(stage) for stage in STAGES)  # the report's stage column


def fitted_exponent(sizes: list[int], seconds: list[float]) -> float | None:
    """b in seconds = a * N**b, by least squares on the logs; 1.0 is linear."""
    if len(sizes) < 2:
        return None
    xs, ys = [math.log(n) for n in sizes], [math.log(s) for s in seconds]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)


def growth_exponents(results: list[dict], seeds: dict) -> dict[str, float | None]:
    """How end-to-end time grows with N: over the whole time, and over the time beyond a run's
    fixed cost (the bundled seeds built from scratch: imports, dbt start-up and parse, the first
    Great Expectations import). Over sizes this far apart the first mostly says how large the
    fixed cost is; the second is the one judged against linear."""
    sizes = [r["abstracts"] for r in results]
    seconds = [r["pipeline"]["seconds"] for r in results]
    fixed = seeds["fresh"]["seconds"]
    beyond = [s - fixed for s in seconds]
    return {
        "exponent": fitted_exponent(sizes, seconds),
        "exponent_beyond_fixed_cost": fitted_exponent(sizes, beyond) if min(beyond, default=0) > 0 else None,
    }


def finished(results: list[dict]) -> list[dict]:
    """The sizes whose pipeline ran to the end (see ``bench_size``)."""
    return [r for r in results if "failed" not in r["pipeline"]]


def engines_table(sizes: list[dict]) -> None:
    """Each other engine's run beside the default's at each size, whole and step by step."""
    for r in sizes:
        default = r["pipeline"]
        for engine, run in r.get("engines", {}).items():
            if "failed" in run or not run.get("success"):
                print(f"\n{r['abstracts']:,} abstracts on {engine}: did not finish ({str(run.get('failed'))[:300]})")
                continue
            print(f"\n{r['abstracts']:,} abstracts: {engine} beside duckdb (seconds; peak RSS of the process tree)")
            print(f"{'step':<34} {'duckdb':>8} {engine:>8} {'ratio':>6}")
            steps = sorted(set(default.get("steps", {})) | set(run["steps"]))
            rows = [("end to end", default.get("process_seconds", 0.0), run["process_seconds"])]
            rows += [(step, default.get("steps", {}).get(step, 0.0), run["steps"].get(step, 0.0)) for step in steps]
            for step, local, other in rows:
                ratio = f"{other / local:.2f}" if local else "-"
                print(f"{step:<34} {local:>8.1f} {other:>8.1f} {ratio:>6}")
            print(f"{'peak RSS MB':<34} {default.get('peak_rss_mb', 0):>8} {run['peak_rss_mb']:>8}")
            print(f"{'papers':<34} {default.get('papers', 0):>8} {run['papers']:>8}")


def script_ratio(result: dict) -> float | None:
    """The whole `paperhouse run` process's time over the plain script's (both whole processes, Python's
    start and imports included), or None when the script did not finish or was not run."""
    script = result.get("baselines", {}).get("script")
    if not script or "failed" in script:
        return None
    return result["pipeline"]["process_seconds"] / script["process_seconds"]


def report(sizes: list[dict], seeds: dict) -> list[tuple[str, bool]]:
    """Print the tables and return each target with whether it is met."""
    engines_table(sizes)
    for r in sizes:
        if "failed" in r["pipeline"]:
            p = r["pipeline"]
            print(
                f"\n{r['abstracts']:,} abstracts: the pipeline did not finish ({p['failed'][:300]}); "
                f"peak RSS {p['peak_rss_mb']} MB after {p['seconds']:.0f} s"
            )
    results = finished(sizes)
    # End to end is the whole `paperhouse run` process, Python's start and imports included, as the
    # seeds' target is judged; the Dagster run within it beside it.
    print(
        f"\n{'abstracts':>10} {'end to end s':>12} {'(run s)':>8} {'abstracts/s':>11} {'peak MB':>8} {'papers':>8} "
        f"{'dedup P':>8} {'dedup R':>8}"
    )
    for r in results:
        p = r["pipeline"]
        print(
            f"{r['abstracts']:>10} {p['process_seconds']:>12.1f} {p['seconds']:>8.1f} "
            f"{r['abstracts'] / p['process_seconds']:>11.0f} "
            f"{p['peak_rss_mb']:>8} {p['papers']:>8} {p['precision']:>8.4f} {p['recall']:>8.4f}"
        )
    print(f"\n{'abstracts':>10} {'end to end s':>12} {'plain script s':>14} {'ratio':>6}")
    for r in results:
        ratio = script_ratio(r)
        script = r["baselines"].get("script", {})
        print(
            f"{r['abstracts']:>10} {r['pipeline']['process_seconds']:>12.1f} "
            + (f"{script['process_seconds']:>14.1f} {ratio:>6.2f}" if ratio else f"{'did not finish':>14} {'-':>6}")
        )
    print(
        f"\n{'abstracts':>10} {'stage':<{_LABEL_WIDTH}} {'paperhouse s':>12} {'baseline':<11} "
        f"{'baseline s':>10} {'ratio':>6}"
    )
    for r in results:
        for stage, s in r["stages"].items():
            ratio = "-" if s["ratio"] is None else f"{s['ratio']:.2f}"
            print(
                f"{r['abstracts']:>10} {stage:<{_LABEL_WIDTH}} {s['seconds']:>12.1f} {s['baseline']:<11} "
                f"{s['baseline_seconds']:>10.1f} {ratio:>6}"
            )
        for name, outcome in [*r["baselines"].items(), ("nlp stages apart", r["nlp"])]:
            if "failed" in outcome:
                print(f"{'':>10} {name:<{_LABEL_WIDTH}} did not finish: {outcome['failed'][:200]}")
        if "failed" not in (n := r["nlp"]):
            print(
                f"{'':>10} {'nlp stages apart':<{_LABEL_WIDTH}} "
                + ", ".join(f"{k} {v:.1f} s" for k, v in n["stages"].items())
                + f"; similar papers recall@5 {n['similar_recall']:.3f} (1,000 papers, against exact search)"
            )
        if "failed" not in (d := r["baselines"]["datasketch"]):
            print(
                f"{'':>10} {'datasketch quality':<{_LABEL_WIDTH}} precision {d['precision']:.4f} recall "
                f"{d['recall']:.4f}, "
                f"peak {d['peak_rss_mb']} MB"
            )
    print(
        "\nsteps (s): "
        + "; ".join(
            f"{r['abstracts']}: "
            + ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["pipeline"]["steps"].items(), key=lambda kv: -kv[1]))
            for r in results
        )
    )
    growth = growth_exponents(results, seeds)
    if growth["exponent"] is not None:
        print(f"time grows as N^{growth['exponent']:.2f} (least squares over {len(results)} sizes; 1.00 is linear)")
    if growth["exponent_beyond_fixed_cost"] is not None:
        print(
            f"time beyond the fixed cost of a run (the seeds from scratch, {seeds['fresh']['seconds']:.1f} s) "
            f"grows as N^{growth['exponent_beyond_fixed_cost']:.2f}"
        )
    print(
        "bundled seeds, whole `paperhouse run` process (of which the Dagster run): "
        + ", ".join(
            f"{name} {run['process_seconds']:.1f} s "
            + ("(up to date: no Dagster run)" if run.get("up_to_date") else f"({run['seconds']:.1f} s)")
            + (f" (the median of {', '.join(f'{t:.1f}' for t in run['samples'])} s)" if "samples" in run else "")
            for name, run in seeds.items()
        )
    )
    print(
        "  steps of the warm build from scratch (s): "
        + ", ".join(f"{k} {v:.1f}" for k, v in sorted(seeds["fresh"]["steps"].items(), key=lambda kv: -kv[1]))
    )

    rerun = seeds.get("rerun", {})
    targets = [
        (
            f"bundled seeds, warm build from scratch <= {TARGET_SEEDS_WARM_SECONDS} s",
            seeds["fresh"]["process_seconds"] <= TARGET_SEEDS_WARM_SECONDS,
        ),
        (
            f"bundled seeds, unchanged rerun (`paperhouse run`) <= {TARGET_SEEDS_RERUN_SECONDS} s",
            bool(rerun.get("up_to_date")) and rerun["process_seconds"] <= TARGET_SEEDS_RERUN_SECONDS,
        ),
    ]
    for r in sizes:
        seconds_target, rss_target = TARGETS.get(r["abstracts"], (None, None))
        done = "failed" not in r["pipeline"]
        if seconds_target:
            targets.append(
                (
                    f"{r['abstracts']} end to end <= {seconds_target} s",
                    done and r["pipeline"]["process_seconds"] <= seconds_target,
                )
            )
        if rss_target:
            targets.append(
                (f"{r['abstracts']} peak RSS <= {rss_target} MB", done and r["pipeline"]["peak_rss_mb"] <= rss_target)
            )
        if r["abstracts"] == 100_000:
            targets.append(
                (
                    f"100000 terms, topics, similar, names <= {TARGET_NLP_SECONDS_100K} s",
                    done and r["stages"]["terms, topics, similar, names"]["seconds"] <= TARGET_NLP_SECONDS_100K,
                )
            )
            ratio = script_ratio(r) if done else None
            targets.append(
                (
                    f"100000 end to end <= {TARGET_SCRIPT_RATIO_100K} x the plain script",
                    ratio is not None and ratio <= TARGET_SCRIPT_RATIO_100K,
                )
            )
    if growth["exponent_beyond_fixed_cost"] is not None:
        targets.append(
            ("time beyond the fixed cost grows linearly (exponent <= 1.1)", growth["exponent_beyond_fixed_cost"] <= 1.1)
        )
    print("\ntargets")
    for name, met in targets:
        print(f"  {'met ' if met else 'MISS'} {name}")
    return targets
