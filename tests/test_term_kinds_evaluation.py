"""The judges of `make eval`'s acronym and alias precision (paperhouse.evaluation.term_kinds): rules
read off the texts, which must find the faults the issue names."""

import polars as pl

from paperhouse.evaluation.term_kinds import acronym_precision, alias_precision

TEXTS = [
    "GRAPH LEARNING. We learn a graph with an estimator of the graph and a GNN.",
    "Graph neural networks (GNNs) and large language models (LLMs) for graph data.",
    "We attack LLMs with adversarial attacks (AA); an attack on the graph estimator.",
    "Low-rank adaptation (LoRA) of LLMs with ResNet backbones and a ResNet estimator.",
]


def test_a_word_written_mostly_in_capitals_or_defined_is_an_acronym_and_others_are_not():
    report = acronym_precision(TEXTS, ["gnn", "lora", "llm", "graph", "estimator", "resnet"])
    assert report["terms"] == 6 and report["wrong"] == ["estimator", "graph", "resnet"]
    assert report["precision"] == 0.5


def test_an_alias_is_right_only_when_its_term_is_the_whole_long_form():
    aliases = pl.DataFrame(
        {
            "alias": ["GNN", "LLM", "AA", "LoRA", "SAE"],
            "term": ["graph neural network", "language model", "attack", "low-rank adaptation", "sparse autoencoder"],
        }
    )
    report = alias_precision(TEXTS, aliases)
    # SAE is defined nowhere in parentheses: not judged.
    assert report["aliases"] == 4 and report["wrong"] == ["AA -> attack", "LLM -> language model"]
    right = alias_precision(TEXTS, pl.DataFrame({"alias": ["LLM"], "term": ["large language model"]}))
    assert right["precision"] == 1.0
    # A word before the term that spells none of the short form's missing capitals is no part of it,
    # whatever its first letter; one that does ("large" for LLM's second L) is.
    texts = ["Training an anomaly detector (AD) is hard.", "The architecture augments adversarial autoencoders (AAEs)."]
    pairs = pl.DataFrame({"alias": ["AD", "AAE"], "term": ["anomaly detector", "adversarial autoencoder"]})
    assert alias_precision(texts, pairs) == {"aliases": 2, "precision": 1.0, "wrong": []}
