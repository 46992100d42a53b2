"""How good are the terms, names and topics? Measured against team-written gold sets and baselines.

`paperhouse eval-terms` (`make eval`) prints the report. Keyphrases: F1@5 and F1@10 on
``src/paperhouse/evaluation/gold/keyphrase_gold.jsonl`` for paperhouse, scikit-learn's ``TfidfVectorizer``
(1-3-grams, English stop words) and YAKE, on the same abstracts. Method names: precision
and recall on ``src/paperhouse/evaluation/gold/method_name_gold.jsonl``. Topics: NPMI coherence of each
topic's top 10 terms beside scikit-learn NMF and LDA at the same number of topics, and the
largest topic's share of papers.

The gold sets were written from the abstracts alone, by a person who had not seen the
extraction code. The abstracts of seed files 000 and 001 were used while developing the
extractor ("dev"); those of 002 and 003 were not looked at ("held out"). The report gives
both splits.

Every system's keyphrases are compared through one matcher: lower case, singular words,
spelling variants folded (the key `paperhouse.nlp.terms.extraction` merges variants on).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from paperhouse.evaluation.real_data import GOLD
from paperhouse.ingest.parse_cache import read_records
from paperhouse.nlp.names import extract_method_names
from paperhouse.nlp.terms.extraction import index_terms, singular, variant_key
from paperhouse.nlp.topics.coherence import npmi_coherence
from paperhouse.nlp.topics.model import TopicModel, fit_topics
from paperhouse.nlp.topics.sizes import max_topic_share
from paperhouse.settings import BUNDLED_SEEDS

KEYPHRASE_GOLD = GOLD / "keyphrase_gold.jsonl"
METHOD_NAME_GOLD = GOLD / "method_name_gold.jsonl"
DEV_FILES = ("000_", "001_")
CUTOFFS = (5, 10)
TOP_TOPIC_TERMS = 10


def match_key(phrase: str) -> str:
    """The form every system's keyphrases and the gold forms are compared in."""
    words = [singular(w) for w in phrase.lower().replace("-", " - ").split()]
    return pl.select(variant_key(pl.lit(" ".join(words).replace(" - ", "-")))).item()


@dataclass(frozen=True)
class Scores:
    precision: float
    recall: float
    f1: float


def score_at(predicted: list[str], gold: list[list[str]], k: int) -> Scores:
    """Precision, recall and F1 of the top k predictions; each gold keyphrase counts once."""
    gold_keys = [{match_key(form) for form in forms} for forms in gold]
    found, hits = set(), 0
    top = list(dict.fromkeys(match_key(p) for p in predicted))[:k]
    for key in top:
        for index, keys in enumerate(gold_keys):
            if key in keys and index not in found:
                found.add(index)
                hits += 1
                break
    precision = hits / k
    recall = len(found) / len(gold_keys)
    f1 = 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)
    return Scores(precision, recall, f1)


def corpus_records(seeds_dir: Path = BUNDLED_SEEDS) -> pl.DataFrame:
    """The accepted abstracts, each its own paper (the bundled lists hold no duplicates)."""
    records = read_records(seeds_dir).filter(pl.col("reject_reason").is_null())
    return records.select(
        paper_id=pl.format("{}#{}", "source_file", "record_no"), source_file="source_file", text="text"
    )


def paperhouse_keyphrases(papers: pl.DataFrame, k: int) -> dict[str, list[str]]:
    ranked = index_terms(papers).paper_terms.filter(pl.col("rank") <= k).sort("paper_id", "rank")
    return {paper: terms for paper, terms in ranked.group_by("paper_id", maintain_order=True).agg("term").iter_rows()}


def tfidf_keyphrases(papers: pl.DataFrame, k: int) -> dict[str, list[str]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(ngram_range=(1, 3), stop_words="english")
    matrix = vectorizer.fit_transform(papers["text"].to_list()).tocsr()  # dense, a real list is gigabytes
    matrix.sort_indices()  # ties go to the earlier term, as a dense stable sort gives them
    vocabulary = vectorizer.get_feature_names_out()
    ranked = {}
    for paper, row in zip(papers["paper_id"], range(matrix.shape[0]), strict=True):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        order = np.argsort(-matrix.data[start:end], kind="stable")[:k]
        ranked[paper] = list(vocabulary[matrix.indices[start:end][order]])
    return ranked


def yake_keyphrases(papers: pl.DataFrame, k: int) -> dict[str, list[str]]:
    import yake

    extractor = yake.KeywordExtractor(lan="en", n=3, top=k)
    return {
        paper: [phrase for phrase, _ in extractor.extract_keywords(text)]
        for paper, text in papers.select("paper_id", "text").iter_rows()
    }


KEYPHRASE_SYSTEMS = {"paperhouse": paperhouse_keyphrases, "tfidf_1to3gram": tfidf_keyphrases, "yake": yake_keyphrases}


def _gold(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluate_keyphrases(papers: pl.DataFrame) -> dict:
    gold = _gold(KEYPHRASE_GOLD)
    predictions = {name: system(papers, max(CUTOFFS)) for name, system in KEYPHRASE_SYSTEMS.items()}
    report: dict = {"abstracts": len(gold), "systems": {}}
    for name, predicted in predictions.items():
        per_split: dict = {}
        for split, entries in _splits(gold).items():
            per_split[split] = {
                f"f1@{k}": round(
                    float(np.mean([score_at(predicted.get(_paper_id(e), []), e["keyphrases"], k).f1 for e in entries])),
                    4,
                )
                for k in CUTOFFS
            }
        report["systems"][name] = per_split
    return report


def _paper_id(entry: dict) -> str:
    return f"{entry['source_file']}#{entry['record_no']}"


def _splits(gold: list[dict]) -> dict[str, list[dict]]:
    dev = [e for e in gold if e["source_file"].startswith(DEV_FILES)]
    held_out = [e for e in gold if not e["source_file"].startswith(DEV_FILES)]
    return {"all": gold, "dev": dev, "held_out": held_out}


def evaluate_method_names(papers: pl.DataFrame) -> dict:
    gold = {_paper_id(e): e for e in _gold(METHOD_NAME_GOLD)}
    names = extract_method_names(papers.select("paper_id", "text"))
    predicted = dict(zip(names["paper_id"], names["method_name"], strict=True))
    report: dict = {}
    for split in ("all", "dev", "held_out"):
        entries = _splits(list(gold.values()))[split]
        named = [e for e in entries if predicted.get(_paper_id(e))]
        correct = [e for e in named if _same_name(predicted[_paper_id(e)], [e["method_name"], *e["also_accept"]])]
        with_name = [e for e in entries if e["method_name"]]
        report[split] = {
            "predicted": len(named),
            "correct": len(correct),
            "precision": round(len(correct) / len(named), 4) if named else None,
            "recall": round(len(correct) / len(with_name), 4) if with_name else None,
        }
    report["wrong"] = [
        {"paper": paper, "predicted": predicted[paper], "gold": entry["method_name"]}
        for paper, entry in gold.items()
        if predicted.get(paper) and not _same_name(predicted[paper], [entry["method_name"], *entry["also_accept"]])
    ]
    return report


def _same_name(predicted: str, accepted: list[str | None]) -> bool:
    def fold(name: str) -> str:
        return "".join(c for c in name.casefold() if c.isalnum())

    return any(name and fold(predicted) == fold(name) for name in accepted)


def evaluate_topics(papers: pl.DataFrame) -> dict:
    """paperhouse's topics beside scikit-learn NMF and LDA (count vectors, English stop words) at the same k."""
    from sklearn.decomposition import NMF, LatentDirichletAllocation
    from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

    index = index_terms(papers)
    model: TopicModel = fit_topics(index.weights)
    k = model.topics.height
    counts = CountVectorizer(stop_words="english", min_df=2)
    matrix = counts.fit_transform(papers["text"].to_list())
    vocabulary = counts.get_feature_names_out()
    tfidf = TfidfTransformer().fit_transform(matrix)
    baselines = {  # each with the matrix it models
        "sklearn_nmf": (NMF(n_components=k, init="nndsvd", max_iter=500, random_state=0).fit(tfidf), tfidf),
        "sklearn_lda": (LatentDirichletAllocation(n_components=k, random_state=0).fit(matrix), matrix),
    }
    present = (matrix > 0).astype(np.float64).tocsc()
    report = {"topics": k, "selection": model.selection.to_dicts(), "systems": {}}
    report["systems"]["paperhouse"] = {
        "npmi": round(float(model.topics["coherence"].mean()), 4),
        "largest_topic_share": round(float(model.topics["n_papers"].max() / papers.height), 4),
        "labels": model.topics["label"].to_list(),
    }
    for name, (baseline, modelled) in baselines.items():
        top = np.argsort(-baseline.components_, axis=1, kind="stable")[:, :TOP_TOPIC_TERMS]
        primary = np.bincount(baseline.transform(modelled).argmax(axis=1), minlength=k)
        report["systems"][name] = {
            "npmi": round(float(np.mean(npmi_coherence(present, top))), 4),
            "largest_topic_share": round(float(primary.max() / papers.height), 4),
            "labels": [", ".join(vocabulary[row[:3]]) for row in top],
        }
    return report


def quality_report(seeds_dir: Path = BUNDLED_SEEDS) -> dict:
    papers = corpus_records(seeds_dir)
    return {
        "keyphrases": evaluate_keyphrases(papers),
        "method_names": evaluate_method_names(papers),
        "topics": evaluate_topics(papers),
    }


TARGET_METHOD_NAME_PRECISION = 0.9


def targets_met(report: dict) -> dict[str, bool]:
    """The issue's targets: beat both baselines at @5 and @10, name precision, no catch-all topic."""
    systems = report["keyphrases"]["systems"]
    ours = systems["paperhouse"]["all"]
    beats = {
        f"keyphrases beat {name} at f1@{k}": ours[f"f1@{k}"] > scores["all"][f"f1@{k}"]
        for name, scores in systems.items()
        if name != "paperhouse"
        for k in CUTOFFS
    }
    topics = report["topics"]
    return {
        **beats,
        f"method name precision >= {TARGET_METHOD_NAME_PRECISION}": (report["method_names"]["all"]["precision"] or 0)
        >= TARGET_METHOD_NAME_PRECISION,
        "no catch-all topic": topics["systems"]["paperhouse"]["largest_topic_share"]
        <= max_topic_share(topics["topics"]),
    }


def format_report(report: dict) -> str:
    keyphrases, names, topics = report["keyphrases"], report["method_names"], report["topics"]
    lines = [
        f"Keyphrases: {keyphrases['abstracts']} gold abstracts (dev = seed files 000-001, held out = 002-003)",
        f"  {'system':<16}"
        + "".join(f"{f'{split} f1@{k}':>18}" for split in ("all", "dev", "held_out") for k in CUTOFFS),
    ]
    for name, scores in keyphrases["systems"].items():
        lines.append(
            f"  {name:<16}"
            + "".join(f"{scores[s][f'f1@{k}']:>18.4f}" for s in ("all", "dev", "held_out") for k in CUTOFFS)
        )
    lines.append("Method names (precision = correct / named; recall = correct / papers with a gold name)")
    for split in ("all", "dev", "held_out"):
        row = names[split]
        lines.append(
            f"  {split:<9} named {row['predicted']:>3}  correct {row['correct']:>3}  "
            f"precision {row['precision']}  recall {row['recall']}"
        )
    lines += [f"  wrong: {w['paper']}: {w['predicted']!r} (gold {w['gold']!r})" for w in names["wrong"]]
    lines.append(
        f"Topics: {topics['topics']} kept (the first size without a catch-all topic);"
        " sizes tried (k, mean NPMI, largest share):"
    )
    lines.append(
        "  "
        + "  ".join(
            f"{t['n_topics']}: {t['coherence']:.3f}/{t['largest_share']:.2f}{'*' if t['chosen'] else ''}"
            for t in topics["selection"]
            if t["coherence"] is not None
        )
    )
    for name, row in topics["systems"].items():
        lines.append(
            f"  {name:<12} mean NPMI {row['npmi']:>7.4f}   largest topic {row['largest_topic_share']:.0%}"
            f"   e.g. {row['labels'][0]!r}"
        )
    lines.append("Targets")
    lines += [f"  {'met ' if ok else 'MISS'} {name}" for name, ok in targets_met(report).items()]
    return "\n".join(lines)
