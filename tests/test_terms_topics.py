import polars as pl

from corpus import seed_abstracts
from paperhouse.normalize import clean_text, normalized_text
from paperhouse.terms import TERM_OCCURRENCE_SCHEMA, extract_terms, singular
from paperhouse.topics import PAPER_TOPIC_SCHEMA, TOPIC_TERM_SCHEMA, fit_topics


def papers(texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"paper_id": [f"p_{i:03d}" for i in range(len(texts))], "text": texts}).select(
        "paper_id", normalized_text=normalized_text(clean_text(pl.col("text")))
    )


def test_singular_is_conservative():
    assert [singular(w) for w in ["networks", "studies", "analyses", "boxes", "loss", "bias", "data", "llms"]] == [
        "network", "study", "analysis", "box", "loss", "bias", "data", "llm"]


def test_phrases_stop_at_stop_words_and_punctuation():
    occurrences = extract_terms(papers(["Graph neural networks for molecular property prediction, with sparse autoencoders."]))
    terms = set(occurrences["term"])
    assert {"graph neural network", "molecular property prediction", "sparse autoencoder", "graph"} <= terms
    assert not any("for" in t.split() or "with" in t.split() for t in terms)
    assert "network molecular" not in terms  # no phrase across a stop word
    assert "prediction sparse" not in terms  # no phrase across a comma


def test_terms_count_occurrences_per_paper():
    occurrences = extract_terms(papers(["Diffusion models beat GANs. Diffusion models are slow."]))
    counts = dict(zip(occurrences["term"], occurrences["count"]))
    assert counts["diffusion model"] == 2 and counts["gan"] == 1


def test_topics_are_deterministic_and_give_every_paper_a_primary_topic():
    occurrences = extract_terms(papers(seed_abstracts()))
    first, second = fit_topics(occurrences), fit_topics(occurrences.sample(fraction=1.0, shuffle=True, seed=3))
    assert first.paper_topics.equals(second.paper_topics) and first.topic_terms.equals(second.topic_terms)
    primary = first.paper_topics.sort("weight", descending=True).group_by("paper_id").first()
    assert primary.height == 76
    assert primary["topic_id"].n_unique() >= 2
    shares = first.paper_topics.group_by("paper_id").agg(pl.col("weight").sum())
    assert shares["weight"].max() <= 1.0 + 1e-5  # weights are rounded to 6 decimals


def test_empty_corpus_gives_empty_typed_tables():
    occurrences = extract_terms(pl.DataFrame(schema={"paper_id": pl.String, "normalized_text": pl.String}))
    assert occurrences.schema == pl.Schema(TERM_OCCURRENCE_SCHEMA) and occurrences.height == 0
    model = fit_topics(occurrences)
    assert model.paper_topics.schema == pl.Schema(PAPER_TOPIC_SCHEMA) and model.paper_topics.height == 0
    assert model.topic_terms.schema == pl.Schema(TOPIC_TERM_SCHEMA) and model.topic_terms.height == 0
