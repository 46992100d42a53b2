"""How good are the terms, topics, similar papers and names on real lists nobody here wrote?

`paperhouse eval-real` (part of `make eval`) builds each half of each source in
``paperhouse.evaluation.real_data`` with a real `paperhouse run` into a scratch warehouse, reads the marts,
and scores them beside the plain tools a user would pick instead, fitted in the same run on the
same half: YAKE and scikit-learn's ``TfidfVectorizer`` (1-3-grams) for keyphrases, scikit-learn
NMF at paperhouse's number of topics, and TF-IDF cosine neighbours for similar papers.

The protocols are the usual ones for such data (``shared/realdata/README.md``):
- keyphrases on the conference lists: recall@10 and F1@10 against the author keywords that occur
  in the abstract; on Inspec: F1@10 against all gold keyphrases; words Porter-stemmed, a phrase
  matches only as a whole;
- topics: mean NPMI of each topic's top 10 terms over the documents holding them (a term is held
  where its words occur in a row, a singular word matching its plural), the largest topic's share
  of papers, and the topics whose top terms hold near-copies of each other;
- similar papers: the share of a paper's five nearest papers that share an author keyword with it;
- display names: the share of a name's content words found in the paper's real title;
- the corpus's most used terms (the dashboard's top 30): the share that are some paper's author
  keyword.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from paperhouse.evaluation.gold_terms import tfidf_keyphrases, yake_keyphrases
from paperhouse.evaluation.real_data import HALVES, WHOLE, Half, write_half
from paperhouse.evaluation.real_measures import (
    K,
    content_words,
    document_ngrams,
    keyphrase_scores,
    keyword_keys,
    near_copies,
    present_keywords,
    shared_keyword_share,
    topic_npmi,
)
from paperhouse.evaluation.term_kinds import acronym_precision, alias_precision
from paperhouse.nlp.keyphrases.embeddings import Embed, minilm, rank_by_embeddings
from paperhouse.nlp.keyphrases.noun_phrases import term_keys
from paperhouse.nlp.stems import stem_key
from paperhouse.warehouse.database import connect_reader

# The keyphrases of `paperhouse run --keyphrase-embeddings`, an option off by default.
EMBEDDINGS = "paperhouse_embeddings"
NEIGHBOURS = 5
TOP_TOPIC_TERMS = 10
TOP_CORPUS_TERMS = 30

# The keyphrase targets are met by paperhouse when met by default or with the embeddings option
# (an option off by default may meet them: issue 39); the report prints both figures.
_OPTION = "by default or with --keyphrase-embeddings"

TARGETS = {  # judged on the half that was not tuned on
    f"keyphrase recall@10 >= 1.15 x best of YAKE and TF-IDF, {_OPTION}": lambda r: (
        max(r["keyphrases"]["ratio_to_best"], r["keyphrases"]["embeddings_ratio_to_best"]) >= 1.15
    ),
    f"Inspec F1@10 >= 0.33, {_OPTION}": lambda r: (
        max(r["inspec"]["paperhouse"]["f1@10"], r["inspec"][EMBEDDINGS]["f1@10"]) >= 0.33
    ),
    "largest topic <= 20% of papers": lambda r: r["topics"]["paperhouse"]["largest_share"] <= 0.20,
    "topic NPMI >= 1.1 x NMF at the same k": lambda r: r["topics"]["ratio_to_nmf"] >= 1.1,
    "no topic's top terms are near-copies": lambda r: r["topics"]["paperhouse"]["near_copy_topics"] == 0,
    "similar papers share a keyword >= 1.1 x TF-IDF cosine": lambda r: r["similar"]["ratio_to_tfidf"] >= 1.1,
    "display names: >= 60% of content words in the title": lambda r: r["names"]["title_word_share"] >= 0.60,
}


# ---------------------------------------------------------------------------------------------
# paperhouse's answers: a real run on the half, then its marts


def build(half: Half, warehouse: Path) -> None:
    """`paperhouse run` on the half's folder, in a process and Dagster instance of its own."""
    env = os.environ | {"DAGSTER_HOME": str(warehouse.parent / "dagster_home")}
    Path(env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "paperhouse.cli",
        "run",
        "--seeds",
        str(half.folder),
        "--warehouse",
        str(warehouse),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"paperhouse run failed on {half.folder}: {done.stderr.strip()[-2000:]}")


def read_marts(warehouse: Path) -> dict[str, pl.DataFrame]:
    queries = {
        "sources": "select source_file, record_no, paper_id, match_kind from marts.paper_sources",
        "terms": (
            "select paper_id, list(term order by rank) as terms from marts.paper_terms"
            " where rank <= 10 group by paper_id"
        ),
        "paper_terms": "select paper_id, term, weight, rank from marts.paper_terms",
        # What the run's analysis mined (keyword-only terms are added after it), and their aliases.
        "mined_terms": "select term from marts.terms where kind != 'keyword'",
        "aliases": "select alias, term from marts.term_aliases",
        "acronyms": "select term from marts.terms where kind = 'acronym'",
        "acronym_aliases": "select alias, term from marts.term_aliases where alias_kind = 'acronym'",
        "topic_terms": "select topic_id, list(term order by rank) as terms from marts.topic_terms group by topic_id",
        "paper_topics": "select paper_id, topic_id from marts.paper_topics where is_primary",
        "similar": "select paper_id, similar_paper_id from marts.similar_papers where rank <= 5",
        "names": "select paper_id, display_name from marts.papers",
        "top_terms": (
            f"select term from marts.terms order by key_papers desc, doc_freq desc, term limit {TOP_CORPUS_TERMS}"
        ),
    }
    with connect_reader(warehouse) as con:
        return {name: con.execute(sql).pl() for name, sql in queries.items()}


def _by_record(labels: pl.DataFrame, marts: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The labels with each record's paper_id, ranked terms and display name."""
    return (
        labels.join(marts["sources"], on=["source_file", "record_no"], how="left")
        .join(marts["terms"], on="paper_id", how="left")
        .join(marts["names"], on="paper_id", how="left")
        .with_columns(pl.col("terms").fill_null([]))
    )


# ---------------------------------------------------------------------------------------------
# Topics


def nmf_topics(texts: list[str], k: int) -> tuple[list[list[str]], float]:
    """scikit-learn NMF at k topics on TF-IDF of unigram counts: its top terms and largest share."""
    from sklearn.decomposition import NMF
    from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

    counts = CountVectorizer(stop_words="english", min_df=2)
    matrix = TfidfTransformer().fit_transform(counts.fit_transform(texts))
    model = NMF(n_components=k, init="nndsvd", max_iter=500, random_state=0).fit(matrix)
    vocabulary = counts.get_feature_names_out()
    top = np.argsort(-model.components_, axis=1, kind="stable")[:, :TOP_TOPIC_TERMS]
    primary = np.bincount(model.transform(matrix).argmax(axis=1), minlength=k)
    return [list(vocabulary[row]) for row in top], float(primary.max() / len(texts))


def evaluate_topics(labels: pl.DataFrame, marts: dict[str, pl.DataFrame]) -> dict:
    texts = labels["text"].to_list()
    documents = document_ngrams(texts)
    ours = marts["topic_terms"]["terms"].to_list()
    k = len(ours)
    sizes = marts["paper_topics"]["topic_id"].value_counts()["count"]
    baseline, baseline_largest = nmf_topics(texts, k)
    copies = [pairs for terms in ours if (pairs := near_copies(terms))]
    report = {
        "topics": k,
        "paperhouse": {
            "npmi": topic_npmi(documents, ours),
            "largest_share": round(float(sizes.max() / marts["paper_topics"].height), 4),
            "near_copy_topics": len(copies),
            "near_copy_example": list(copies[0][0]) if copies else None,
        },
        "nmf": {
            "npmi": topic_npmi(documents, baseline),
            "largest_share": round(baseline_largest, 4),
            "near_copy_topics": sum(1 for terms in baseline if near_copies(terms)),
        },
    }
    report["ratio_to_nmf"] = round(report["paperhouse"]["npmi"] / report["nmf"]["npmi"], 3)
    return report


# ---------------------------------------------------------------------------------------------
# Similar papers, names, corpus terms


def tfidf_neighbours(texts: list[str], k: int = NEIGHBOURS) -> list[list[int]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectors = TfidfVectorizer(stop_words="english").fit_transform(texts)
    similarity = (vectors @ vectors.T).toarray()
    np.fill_diagonal(similarity, -1.0)
    return np.argsort(-similarity, axis=1, kind="stable")[:, :k].tolist()


def evaluate_similar(records: pl.DataFrame, marts: dict[str, pl.DataFrame]) -> dict:
    keys = [keyword_keys(keywords) for keywords in records["keywords"]]
    row_of = {
        paper: row
        for row, (paper, kind) in enumerate(records.select("paper_id", "match_kind").iter_rows())
        if kind == "canonical"
    }
    found = marts["similar"].group_by("paper_id").agg("similar_paper_id")
    by_paper = dict(found.iter_rows())
    ours = [[row_of[p] for p in by_paper.get(paper, []) if p in row_of] for paper in records["paper_id"]]
    report = {
        "paperhouse": shared_keyword_share(keys, ours),
        "tfidf_cosine": shared_keyword_share(keys, tfidf_neighbours(records["text"].to_list())),
    }
    report["ratio_to_tfidf"] = round(report["paperhouse"] / report["tfidf_cosine"], 3)
    return report


def evaluate_names(records: pl.DataFrame) -> dict:
    shares = []
    for name, title in records.select("display_name", "title").iter_rows():
        words = content_words(name or "")
        if words and title:
            shares.append(len(words & content_words(title)) / len(words))
    return {
        "title_word_share": round(float(np.mean(shares)), 4),
        "papers": len(shares),
        "examples": records.select("display_name", "title").head(5).rows(),
    }


def evaluate_corpus_terms(labels: pl.DataFrame, marts: dict[str, pl.DataFrame]) -> dict:
    keywords = set().union(*(keyword_keys(k) for k in labels["keywords"]))
    top = marts["top_terms"]["term"].to_list()
    return {"keyword_share": round(sum(stem_key(t) in keywords for t in top) / max(len(top), 1), 4), "top": top[:12]}


def evaluate_term_kinds(labels: pl.DataFrame, marts: dict[str, pl.DataFrame]) -> dict:
    texts = labels["text"].to_list()
    return {
        "acronyms": acronym_precision(texts, marts["acronyms"]["term"].to_list()),
        "aliases": alias_precision(texts, marts["acronym_aliases"]),
    }


# ---------------------------------------------------------------------------------------------
# The report


def embedded_terms(labels: pl.DataFrame, marts: dict[str, pl.DataFrame], embed: Embed) -> pl.DataFrame:
    """``records`` (``_by_record``) with ``embedded_terms``: each paper's ten keyphrases as
    ``paperhouse run --keyphrase-embeddings`` finds them (``rank_by_embeddings`` of the same
    ``paper_terms`` and vocabulary, on each paper's canonical text: the option changes nothing else)."""
    texts = (
        labels.join(marts["sources"], on=["source_file", "record_no"])
        .filter(pl.col("match_kind") == "canonical")
        .select("paper_id", "text")
    )
    terms_by_key = term_keys(marts["mined_terms"]["term"], marts["aliases"])
    keyphrases = rank_by_embeddings(marts["paper_terms"], texts, terms_by_key, embed).keyphrases
    terms = keyphrases.group_by("paper_id").agg(embedded_terms=pl.col("keyphrase").sort_by("rank"))
    return (
        _by_record(labels, marts)
        .join(terms, on="paper_id", how="left")
        .with_columns(pl.col("embedded_terms").fill_null([]))
    )


def _keyphrase_systems(labels: pl.DataFrame, records: pl.DataFrame, gold: list[list[str]]) -> dict:
    papers = labels.select(paper_id=pl.format("{}#{}", "source_file", "record_no"), text="text")
    ids = papers["paper_id"].to_list()
    systems = {"paperhouse": records["terms"].to_list(), EMBEDDINGS: records["embedded_terms"].to_list()}
    for name, system in (("yake", yake_keyphrases), ("tfidf_1to3gram", tfidf_keyphrases)):
        predicted = system(papers, K)
        systems[name] = [predicted.get(paper, []) for paper in ids]
    return {name: keyphrase_scores(predicted, gold) for name, predicted in systems.items()}


def evaluate_half(conferences: Half, inspec: Half, scratch: Path, embed: Embed) -> dict:
    built = {}
    for half in (conferences, inspec):
        warehouse = scratch / f"{half.source}_{half.half}" / "paperhouse.duckdb"
        warehouse.parent.mkdir(parents=True, exist_ok=True)
        build(half, warehouse)
        built[half.source] = read_marts(warehouse)
    marts = built["conferences"]
    records = embedded_terms(conferences.labels, marts, embed)
    keyphrases = _keyphrase_systems(conferences.labels, records, present_keywords(conferences.labels))
    best = max(keyphrases["yake"]["recall@10"], keyphrases["tfidf_1to3gram"]["recall@10"])
    keyphrases["ratio_to_best"] = round(keyphrases["paperhouse"]["recall@10"] / best, 3)
    keyphrases["embeddings_ratio_to_best"] = round(keyphrases[EMBEDDINGS]["recall@10"] / best, 3)
    inspec_records = embedded_terms(inspec.labels, built["inspec"], embed)
    return {
        "papers": conferences.labels.height,
        "keyphrases": keyphrases,
        "inspec": _keyphrase_systems(inspec.labels, inspec_records, inspec.labels["keywords"].to_list()),
        "topics": evaluate_topics(conferences.labels, marts),
        "similar": evaluate_similar(records, marts),
        "names": evaluate_names(records),
        "corpus_terms": evaluate_corpus_terms(conferences.labels, marts),
        "term_kinds": evaluate_term_kinds(conferences.labels, marts),
    }


def topic_growth(scratch: Path) -> dict:
    """The number of topics and the largest topic's share for the whole conference lists, beside
    their halves': topics should grow with the corpus, not stay put."""
    whole = write_half("conferences", WHOLE, scratch)
    warehouse = scratch / "conferences_whole" / "paperhouse.duckdb"
    build(whole, warehouse)
    with connect_reader(warehouse) as con:
        topics, largest = con.execute(
            "select count(*), max(n_papers) / (select count(*) from marts.papers) from marts.topics where level = 1"
        ).fetchone()
    return {"papers": whole.labels.height, "topics": topics, "largest_share": round(float(largest), 4)}


def real_data_report(halves: tuple[str, ...] = HALVES, growth: bool = True) -> dict:
    embed = minilm()
    with tempfile.TemporaryDirectory(prefix="paperhouse-eval-real-") as folder:
        scratch = Path(folder)
        report = {
            half: evaluate_half(
                write_half("conferences", half, scratch), write_half("inspec", half, scratch), scratch, embed
            )
            for half in halves
        }
        if growth:
            report[WHOLE] = topic_growth(scratch)
        return report


def topics_grow(report: dict) -> bool:
    """Both halves together hold more topics than either half alone."""
    return report[WHOLE]["topics"] > max(report[half]["topics"]["topics"] for half in HALVES if half in report)


def targets_met(half_report: dict) -> dict[str, bool]:
    return {name: bool(judge(half_report)) for name, judge in TARGETS.items()}


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def format_report(report: dict) -> str:
    lines = []
    for half, r in report.items():
        if half == WHOLE:
            halves = ", ".join(f"{report[h]['topics']['topics']} for the {h} half" for h in HALVES if h in report)
            lines.append(
                f"  {'met ' if topics_grow(report) else 'MISS'} topics grow with the list: {r['topics']} topics"
                f" for both halves ({r['papers']} conference abstracts; {halves}), the largest holding"
                f" {r['largest_share']:.0%}"
            )
            continue
        lines.append(
            f"Real lists, half '{half}' ({r['papers']} conference abstracts; "
            f"{'tuned on' if half == 'tune' else 'never tuned on'})"
        )
        lines.append(f"  {'keyphrases':<22}{'recall@10':>10}{'F1@10':>8}   {'Inspec F1@10':>12}")
        for name, scores in r["keyphrases"].items():
            if isinstance(scores, dict):
                lines.append(
                    f"  {name:<22}{scores['recall@10']:>10.3f}{scores['f1@10']:>8.3f}"
                    f"   {r['inspec'][name]['f1@10']:>12.3f}"
                )
        t = r["topics"]
        lines.append(
            f"  topics: {t['topics']}; NPMI paperhouse {t['paperhouse']['npmi']:.3f}, NMF {t['nmf']['npmi']:.3f}"
            f" (x{t['ratio_to_nmf']}); largest topic {t['paperhouse']['largest_share']:.0%} (NMF "
            f"{t['nmf']['largest_share']:.0%}); topics with near-copy top terms {t['paperhouse']['near_copy_topics']}"
            f" (NMF {t['nmf']['near_copy_topics']})"
        )
        s = r["similar"]
        lines.append(
            f"  similar papers sharing an author keyword: paperhouse {s['paperhouse']:.3f}, "
            f"TF-IDF cosine {s['tfidf_cosine']:.3f} (x{s['ratio_to_tfidf']})"
        )
        lines.append(f"  display names: {r['names']['title_word_share']:.0%} of their content words in the real title")
        c = r["corpus_terms"]
        lines.append(
            f"  top {TOP_CORPUS_TERMS} corpus terms that are author keywords: {c['keyword_share']:.0%} "
            f"({', '.join(c['top'])}, ...)"
        )
        acronyms, aliases = r["term_kinds"]["acronyms"], r["term_kinds"]["aliases"]
        lines.append(
            f"  term kinds: {_share(acronyms['precision'])} of {acronyms['terms']} acronym terms written or defined as"
            f" acronyms; {_share(aliases['precision'])} of {aliases['aliases']} acronym aliases (defined in the texts)"
            f" name their whole long form (wrong: {', '.join(aliases['wrong'][:4]) or 'none'})"
        )
        lines.append("  targets" + (" (judged here)" if half == "report" else " (for reference)"))
        lines += [f"    {'met ' if ok else 'MISS'} {name}" for name, ok in targets_met(r).items()]
        k, inspec = r["keyphrases"], r["inspec"]
        lines.append(
            f"    (keyphrases by default: recall x{k['ratio_to_best']}, Inspec {inspec['paperhouse']['f1@10']:.3f};"
            f" with --keyphrase-embeddings: recall x{k['embeddings_ratio_to_best']},"
            f" Inspec {inspec[EMBEDDINGS]['f1@10']:.3f})"
        )
    return "\n".join(lines)
