"""What a measured process runs (``paperhouse.evaluation.bench`` starts one per method, on the same files):
the pipeline, each baseline, and paperhouse's own NLP stages timed apart; dedup scored against the
synthetic corpus's labels."""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl

from paperhouse.evaluation.synth import labels_path
from paperhouse.settings import Paths
from paperhouse.warehouse.database import connect_reader

# Dagster steps whose work a baseline does too.
STAGES = {
    "ingest": ("raw__source_records", "read_text"),
    "dedup": ("paper_assignments", "datasketch"),
    "terms, topics, similar, names": ("corpus_analysis", "sklearn"),  # names: no baseline, counted here
}


def pairwise_scores(clusters: pl.DataFrame, labels: pl.DataFrame) -> dict[str, float]:
    """Precision and recall over record pairs: ``clusters`` (source_file, record_no, cluster)."""
    joined = clusters.join(labels, on=["source_file", "record_no"])
    pairs = lambda frame: int((frame["n"] * (frame["n"] - 1) // 2).sum())  # noqa: E731
    predicted = pairs(joined.group_by("cluster").agg(n=pl.len()))
    true = pairs(joined.group_by("original").agg(n=pl.len()))
    both = pairs(joined.group_by("cluster", "original").agg(n=pl.len()))
    return {"precision": both / max(predicted, 1), "recall": both / max(true, 1)}


def _labels(lists: Path) -> pl.DataFrame:
    return pl.read_csv(labels_path(lists), schema_overrides={"record_no": pl.Int32})


def run_pipeline(lists: Path, warehouse: Path, engine: str = "") -> dict:
    """``paperhouse run [--engine ENGINE]`` on ``lists`` into ``warehouse``; scored when the lists
    carry labels."""
    from paperhouse.pipeline import load_runner

    run_all = load_runner()
    paths = Paths(seeds_dir=lists, warehouse=warehouse)
    started = time.perf_counter()
    outcome = run_all(paths, engine=engine)  # the corpus step reads $PAPERHOUSE_KEYPHRASE_EMBEDDINGS
    result = {"seconds": time.perf_counter() - started, "success": outcome.success, "steps": outcome.step_seconds}
    if not outcome.success:
        return result | {"reason": outcome.reason}
    with connect_reader(paths.warehouse) as con:
        clusters = con.execute("select source_file, record_no, paper_id as cluster from marts.paper_sources").pl()
        result["papers"], result["topics"] = con.execute(
            "select (select count(*) from marts.papers), (select count(*) from marts.topics where level = 1)"
        ).fetchone()
    if labels_path(lists).exists():
        result |= pairwise_scores(clusters, _labels(lists))
    return result


def run_read_text(folder: Path) -> dict:
    import duckdb

    started = time.perf_counter()
    files, characters = duckdb.sql(
        "select count(*), sum(length(content)) from read_text(?)", params=[str(folder / "lists" / "*.txt")]
    ).fetchone()
    return {"seconds": time.perf_counter() - started, "files": files, "characters": characters}


def run_datasketch(folder: Path) -> dict:
    import numpy as np
    from datasketch import MinHash, MinHashLSH
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from paperhouse.ingest.normalize import words

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
    return {
        "seconds": seconds,
        "papers": int(component.max()) + 1,
        **pairwise_scores(clusters, _labels(folder / "lists")),
    }


def run_sklearn(folder: Path, n_topics: int) -> dict:
    from sklearn.decomposition import NMF
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = pl.read_parquet(folder / "records.parquet")["text"].to_list()
    started = time.perf_counter()
    tfidf = TfidfVectorizer(ngram_range=(1, 3), stop_words="english", min_df=2).fit_transform(texts)
    NMF(n_components=n_topics, init="nndsvd", random_state=0).fit(tfidf)
    return {"seconds": time.perf_counter() - started, "features": tfidf.shape[1], "topics": n_topics}


def run_script(folder: Path, n_topics: int) -> dict:
    """The script a user would write instead of paperhouse (issue 54's end-to-end baseline), on the
    same lists: Polars splits them into abstracts (a list's first paragraph is its header), exact
    copies are dropped by hash, scikit-learn fits TF-IDF (1-3-grams) and NMF at paperhouse's number
    of topics, and the papers (with their topic), terms and topics are written to a DuckDB file."""
    import duckdb
    import numpy as np
    from sklearn.decomposition import NMF
    from sklearn.feature_extraction.text import TfidfVectorizer

    started = time.perf_counter()
    files = sorted((folder / "lists").glob("*.txt"))
    papers = (
        pl.DataFrame({"content": [path.read_text(errors="replace") for path in files]})
        .select(paragraph=pl.col("content").str.split("\n\n").list.slice(1))
        .explode("paragraph")
        .select(text=pl.col("paragraph").str.strip_chars())
        .filter(pl.col("text") != "")
        .with_columns(paper_id=pl.col("text").hash().cast(pl.String))
        .unique("paper_id", keep="first", maintain_order=True)
    )
    vectorizer = TfidfVectorizer(ngram_range=(1, 3), stop_words="english", min_df=2)
    tfidf = vectorizer.fit_transform(papers["text"].to_list())
    nmf = NMF(n_components=n_topics, init="nndsvd", random_state=0)
    shares = nmf.fit_transform(tfidf)
    vocabulary = vectorizer.get_feature_names_out()
    top = np.argsort(-nmf.components_, axis=1)[:, :10]
    topics = pl.DataFrame(
        {
            "topic": np.repeat(np.arange(n_topics), top.shape[1]),
            "rank": np.tile(np.arange(1, top.shape[1] + 1), n_topics),
            "term": vocabulary[top.ravel()],
            "weight": np.take_along_axis(nmf.components_, top, axis=1).ravel(),
        }
    )
    terms = pl.DataFrame({"term": vocabulary, "doc_freq": np.asarray((tfidf > 0).sum(axis=0)).ravel()})
    papers = papers.with_columns(topic=pl.Series(shares.argmax(axis=1)))
    database = folder / "script.duckdb"
    database.unlink(missing_ok=True)
    with duckdb.connect(str(database)) as con:
        for name, frame in (("papers", papers), ("terms", terms), ("topics", topics)):
            con.from_arrow(frame.to_arrow()).create(name)
    return {"seconds": time.perf_counter() - started, "papers": papers.height, "terms": terms.height}


def run_nlp(folder: Path) -> dict:
    """Terms, topics, similar papers and method names timed apart on the records, and the recall
    of the neighbour search against exact search for 1,000 papers."""
    from paperhouse.nlp.names import extract_method_names
    from paperhouse.nlp.similar import search_recall, similar_papers
    from paperhouse.nlp.terms.extraction import index_terms
    from paperhouse.nlp.topics.model import fit_topics

    papers = pl.read_parquet(folder / "records.parquet").select(
        paper_id=pl.format("{}#{}", "source_file", "record_no"), text="text", normalized_text="normalized_text"
    )
    seconds = {}

    def timed(stage: str, work, *args):
        started = time.perf_counter()
        result = work(*args)
        seconds[stage] = time.perf_counter() - started
        return result

    index = timed("terms", index_terms, papers)
    timed("topics", fit_topics, index.weights)
    neighbours = timed("similar", similar_papers, index.weights)
    timed("names", extract_method_names, papers.select("paper_id", "text"))
    return {
        "seconds": sum(seconds.values()),
        "stages": seconds,
        "similar_recall": search_recall(index.weights, neighbours),
    }
