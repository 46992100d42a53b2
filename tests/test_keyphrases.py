"""How terms are ranked within a paper: established phrases of the list before phrases cut out of one
abstract, by as much as the list's papers share their phrases."""

import polars as pl
import pytest

from paperhouse.ingest.normalize import clean_text
from paperhouse.nlp.terms import weights as term_weights
from paperhouse.nlp.terms.extraction import index_terms, phrase_recurrence, verb_lemmas, verb_uses


def papers(texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"paper_id": [f"p_{i:03d}" for i in range(len(texts))], "text": texts}).select(
        "paper_id", text=clean_text(pl.col("text"))
    )


FIELD_PHRASES = [
    "graph neural network",
    "message passing",
    "node classification",
    "contrastive learning",
    "diffusion model",
    "policy gradient",
    "knowledge distillation",
    "label noise",
]
ODD_WORDS = (
    "quaint lantern mosaic velvet harbour clockwork amber tundra gearbox silent copper orchard hollow marble".split()
)


def field_list(n_papers: int = 40) -> pl.DataFrame:
    """Abstracts of one field: each names two of its shared concepts once and a phrase of its own once."""
    texts = []
    for i in range(n_papers):
        first, second = FIELD_PHRASES[i % 8], FIELD_PHRASES[(3 * i + 1) % 8]
        odd = " ".join(ODD_WORDS[(i + j * 5) % len(ODD_WORDS)] for j in range(3)) + f" x{i}"
        texts.append(f"We revisit {first}. Then {odd} is shown, and {second} is studied.")
    return papers(texts)


def test_phrase_recurrence_is_the_share_of_phrase_uses_shared_with_another_paper():
    terms = pl.DataFrame({"n_words": [2, 2, 3, 1], "doc_freq": [3, 1, 1, 50]})
    # Phrases: 3 + 1 + 1 = 5 (paper, phrase) pairs, 3 of them of a phrase used by several papers;
    # single words do not count.
    assert phrase_recurrence(terms) == pytest.approx(3 / 5)
    assert phrase_recurrence(terms.filter(pl.col("n_words") == 1)) == 0.0


def _first_terms(index) -> list[str]:
    return index.paper_terms.filter(rank=1)["term"].to_list()


def test_in_a_list_that_shares_its_phrases_the_field_concepts_rank_first(monkeypatch):
    corpus = field_list()
    shared = index_terms(corpus)
    assert phrase_recurrence(shared.terms) > 0.4
    assert sum(term in FIELD_PHRASES for term in _first_terms(shared)) >= 0.9 * corpus.height
    # Without the prior (plain TF-IDF) each paper's own phrase, used by no other paper, wins.
    monkeypatch.setattr(term_weights, "phrase_recurrence", lambda _terms: 0.0)
    plain = index_terms(corpus)
    assert sum(term in FIELD_PHRASES for term in _first_terms(plain)) <= 0.1 * corpus.height


def test_verbs_are_read_off_the_corpus_and_break_phrases():
    uses = [
        "We tackle the problem.",
        "To tackle a task, ...",
        "They tackle this.",
        "Methods tackle graphs quickly.",
        "We tackle our goal.",
        "It tackles the rest.",
    ]
    nouns = [
        "Graph learning helps.",
        "A graph of words.",
        "The graph grows.",
        "Each graph is small.",
        "Our graph stays.",
        "One graph more.",
    ]
    tokens = pl.Series(" ".join(uses + nouns).lower().replace(".", " .").replace(",", " ,").split())
    verbs = verb_lemmas(verb_uses(pl.DataFrame({"paper_idx": 0, "token": tokens}))).to_list()
    assert "tackle" in verbs  # 6 uses, 5 right after a subject or "to", or before an article
    assert "graph" not in verbs and "learning" not in verbs
    # A verb found so ends a phrase wherever it stands: its object is the term, not "verb + object".
    corpus = papers(
        [
            f"Prior methods tackle {noun} badly, as we tackle the {noun}. Then we tackle it."
            for noun in ("graph coloring", "protein folding", "motion planning", "image denoising", "speech coding")
        ]
    )
    found = set(index_terms(corpus).paper_terms["term"])
    assert "graph coloring" in found and not any(term.startswith("tackle") for term in found)


def test_a_phrase_ends_in_its_noun_not_in_a_participle():
    corpus = papers(
        [
            "Aliasing effects associated with undersampling degrade the imagery collected by telescopes.",
            "The training speed improves while aliasing effects stay small.",
        ]
    )
    found = set(index_terms(corpus).terms["term"])
    assert {"aliasing effect", "training speed"} <= found  # -eed is a noun's ending
    assert not {"aliasing effect associated", "imagery collected"} & found
