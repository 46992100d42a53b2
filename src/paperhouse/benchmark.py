"""`make bench`: dedup speed, memory and quality at scale, beside datasketch's MinHashLSH.

For each size, a synthetic corpus with labelled duplicates (``paperhouse.synth``) is
written once and ingested; then, each in a fresh process so peak memory is its own,
paperhouse's dedup and datasketch ``MinHashLSH`` (same normalised words, same word
3-shingles, 128 permutations, threshold 0.5) run on the same records. Both are scored
against the labels with pairwise precision and recall.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from paperhouse.settings import BUNDLED_SEEDS, PROJECT_ROOT

DATA = PROJECT_ROOT / "data" / "bench"


def prepare(n_papers: int) -> Path:
    """Synthetic lists for ``n_papers`` abstracts, ingested into a parquet of accepted records."""
    from paperhouse.ingest import read_abstracts, read_records
    from paperhouse.synth import write_corpus

    folder = DATA / f"synth_{n_papers}"
    records = folder / "records.parquet"
    if not records.exists():
        write_corpus(read_abstracts(BUNDLED_SEEDS), n_papers, folder / "lists")
        read_records(folder / "lists").filter(pl.col("reject_reason").is_null()).select(
            "source_file", "record_no", "file_sha256", "normalized_text"
        ).write_parquet(records)
    return folder


def pairwise_scores(clusters: pl.DataFrame, labels: pl.DataFrame) -> dict[str, float]:
    """Precision and recall over record pairs: ``clusters`` (source_file, record_no, cluster)."""
    joined = clusters.join(labels, on=["source_file", "record_no"])
    pairs = lambda frame: int((frame["n"] * (frame["n"] - 1) // 2).sum())  # noqa: E731
    predicted = pairs(joined.group_by("cluster").agg(n=pl.len()))
    true = pairs(joined.group_by("original").agg(n=pl.len()))
    both = pairs(joined.group_by("cluster", "original").agg(n=pl.len()))
    return {"precision": both / max(predicted, 1), "recall": both / max(true, 1)}


def _labels(folder: Path) -> pl.DataFrame:
    return pl.read_csv(folder / "lists" / "labels.csv", schema_overrides={"record_no": pl.Int32})


def run_paperhouse(folder: Path) -> dict:
    from paperhouse.dedup import assign_papers

    records = pl.read_parquet(folder / "records.parquet")
    started = time.perf_counter()
    assigned = assign_papers(records)
    seconds = time.perf_counter() - started
    clusters = assigned.select("source_file", "record_no", cluster="paper_id")
    return {"seconds": seconds, "papers": assigned["paper_id"].n_unique(), **pairwise_scores(clusters, _labels(folder))}


def run_datasketch(folder: Path) -> dict:
    import numpy as np
    from datasketch import MinHash, MinHashLSH
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from paperhouse.normalize import words

    records = pl.read_parquet(folder / "records.parquet")
    word_lists = records.select(words(pl.col("normalized_text")))["normalized_text"].to_list()
    started = time.perf_counter()
    shingles = (
        [" ".join(w[i : i + 3]).encode() for i in range(len(w) - 2)] or [" ".join(w).encode()] for w in word_lists
    )
    sketches = MinHash.bulk(shingles, num_perm=128)
    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    with lsh.insertion_session() as session:
        for index, sketch in enumerate(sketches):
            session.insert(index, sketch)
    rows, cols = [], []
    for index, sketch in enumerate(sketches):
        for other in lsh.query(sketch):
            if other != index:
                rows.append(index)
                cols.append(other)
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(word_lists), len(word_lists)))
    _, component = connected_components(graph, directed=False)
    seconds = time.perf_counter() - started
    clusters = records.select("source_file", "record_no").with_columns(cluster=pl.Series(component))
    return {"seconds": seconds, "papers": int(component.max()) + 1, **pairwise_scores(clusters, _labels(folder))}


def _measure(method: str, folder: Path) -> dict:
    """Run one method in a fresh Python, so its peak RSS is its own."""
    out = subprocess.run(
        [sys.executable, "-m", "paperhouse.benchmark", "--run", method, "--folder", str(folder)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paperhouse bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000,100000", help="comma-separated corpus sizes")
    parser.add_argument("--no-baseline", action="store_true", help="skip datasketch")
    parser.add_argument("--out", default=str(DATA / "dedup.json"))
    parser.add_argument("--run", choices=["paperhouse", "datasketch"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.run:  # the child process of _measure
        result = (run_paperhouse if args.run == "paperhouse" else run_datasketch)(Path(args.folder))
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return 0

    results = []
    header = f"{'abstracts':>10} {'method':<11} {'seconds':>8} {'docs/s':>8} {'peak MB':>8} {'precision':>9} {'recall':>7} {'papers':>7}"
    print(header)
    for size in (int(s) for s in args.sizes.split(",")):
        folder = prepare(size)
        for method in ["paperhouse"] + ([] if args.no_baseline else ["datasketch"]):
            result = {"abstracts": size, "method": method, **_measure(method, folder)}
            results.append(result)
            print(
                f"{size:>10} {method:<11} {result['seconds']:>8.1f} {size / result['seconds']:>8.0f} "
                f"{result['peak_rss_mb']:>8.0f} {result['precision']:>9.4f} {result['recall']:>7.4f} {result['papers']:>7}",
                flush=True,
            )
        if not args.no_baseline:
            ours, theirs = results[-2], results[-1]
            print(f"{'':>10} datasketch / paperhouse time: {theirs['seconds'] / ours['seconds']:.1f}x", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
