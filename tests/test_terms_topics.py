import re
import subprocess
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import polars as pl
import pytest
from corpus import seed_abstracts
from polars.testing import assert_frame_equal

from paperhouse.evaluation.gold_terms import quality_report, score_at, targets_met
from paperhouse.ingest.normalize import clean_text
from paperhouse.nlp import analysis, similar
from paperhouse.nlp import names as names_module
from paperhouse.nlp.analysis import analyse
from paperhouse.nlp.names import extract_method_names
from paperhouse.nlp.similar import SIMILAR_SCHEMA, search_recall, similar_papers
from paperhouse.nlp.sklearn_setup import import_sklearn
from paperhouse.nlp.terms import extraction as terms
from paperhouse.nlp.terms import ngram_counts
from paperhouse.nlp.terms import weights as term_weights
from paperhouse.nlp.terms.acronyms import POSSIBLE_DEFINITION, find_definitions
from paperhouse.nlp.terms.extraction import (
    MAX_SHARED_TERMS_PER_PAPER,
    PAPER_TERM_SCHEMA,
    TERM_SCHEMA,
    index_terms,
    singular,
)
from paperhouse.nlp.topics.model import PAPER_TOPIC_SCHEMA, TOPIC_TERM_SCHEMA, fit_topics
from paperhouse.nlp.topics.sizes import candidate_sizes, max_topic_share
from paperhouse.nlp.topics.top_terms import label


def papers(texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"paper_id": [f"p_{i:03d}" for i in range(len(texts))], "text": texts}).select(
        "paper_id", text=clean_text(pl.col("text"))
    )


def terms_of(texts: list[str]) -> dict[str, list[str]]:
    ranked = index_terms(papers(texts)).paper_terms.sort("paper_id", "rank")
    return dict(ranked.group_by("paper_id", maintain_order=True).agg("term").iter_rows())


def test_singular_is_conservative():
    words = ["networks", "studies", "analyses", "boxes", "loss", "bias", "biases", "data", "llms", "lens"]
    assert [singular(w) for w in words] == [
        "network",
        "study",
        "analysis",
        "box",
        "loss",
        "bias",
        "bias",
        "data",
        "llm",
        "lens",
    ]


def test_schwartz_hearst_finds_acronyms_and_their_long_forms():
    found = find_definitions("We train sparse autoencoders (SAEs) on Large Language Models (LLMs) as in Grant (2025).")
    assert [(d.short_form, d.long_form) for d in found] == [
        ("SAE", "sparse autoencoders"),
        ("LLM", "Large Language Models"),
    ]


def test_only_texts_the_prefilter_keeps_hold_definitions():
    texts = [*seed_abstracts(), "Models ( GNN ) and sparse autoencoders (SAEs), graph transformers (G-Trans)."]
    defining = [text for text in texts if find_definitions(text)]
    assert len(defining) > 10
    assert all(re.search(POSSIBLE_DEFINITION, text) for text in defining)


def test_phrases_stop_at_stop_words_punctuation_and_verbs():
    index = index_terms(
        papers(
            [
                "Graph neural networks for molecular property prediction, with sparse autoencoders. "
                "We deactivate heads coherently."
            ]
        )
    )
    terms = set(index.paper_terms["term"])
    assert {"graph neural network", "molecular property prediction", "sparse autoencoder"} <= terms
    assert not any(w in t.split() for t in terms for w in ("for", "with", "deactivate", "coherently"))
    assert "prediction sparse" not in terms  # no phrase across a comma


def test_acronyms_and_spelling_variants_become_one_term():
    index = index_terms(
        papers(
            [
                "Sparse autoencoders (SAEs) find features. SAEs scale to large models and SAE features are sparse.",
                "We study SAEs and fine-tuning of language models on reasoning data.",
                "Finetuning and fine tuning are the same thing as fine-tuning, which helps fine-tuning.",
            ]
        )
    )
    terms = set(index.terms["term"])
    assert "sae" not in terms and "sae feature" not in terms
    assert "sparse autoencoder feature" in terms
    counts = dict(zip(index.terms["term"], index.terms["doc_freq"], strict=True))
    assert counts["sparse autoencoder"] == 2  # the second paper borrows the first paper's expansion
    assert {"finetuning", "fine tuning"}.isdisjoint(terms) and counts["fine-tuning"] == 2
    aliases = set(zip(index.aliases["alias"], index.aliases["term"], index.aliases["alias_kind"], strict=True))
    assert ("SAE", "sparse autoencoder", "acronym") in aliases
    assert ("finetuning", "fine-tuning", "spelling") in aliases


def test_a_word_is_an_acronym_only_where_the_texts_mostly_write_it_in_capitals():
    index = index_terms(
        papers(
            [
                "GRAPH LEARNING WITH AN ESTIMATOR. We learn a graph with an estimator of the graph.",
                "The graph estimator bounds the label noise of every graph in the benchmark.",
                "A graph of labels, an estimator of the graph, and one more estimator.",
                "We train GNNs on molecules. A GNN is a graph network, and GNNs scale.",
                "GNN layers and LoRA adapters. LoRA adapters keep the GNN small.",
                "LoRA on a graph. MixStyle mixes styles; MixStyle and RainNet help a GNN.",
            ]
        )
    )
    kind = dict(zip(index.terms["term"], index.terms["kind"], strict=True))
    # Written in capitals once (a heading) among many lower-case uses: a word, not an acronym.
    assert kind["graph"] == "word" and kind["estimator"] == "word"
    # Written mostly in capitals (more capital letters than small ones) wherever they appear: acronyms.
    assert kind["gnn"] == "acronym" and kind["lora"] == "acronym"
    # Names in camel case are no acronyms, however often they are written so.
    assert kind["mixstyle"] == "word" and kind["rainnet"] == "word"


@pytest.mark.parametrize("other_acronyms", [0, 19])
def test_lowercase_words_are_never_taken_for_acronyms(other_acronyms):
    # Keys are looked for a few at a time: 19 keys that sort before "rise" put it in a later batch.
    fruit = (
        "apple banana cherry date elder fig grape hazel iris juniper kiwi lemon mango nutmeg olive "
        "pear quince raisin sage"
    )
    defined = " ".join(f"Alpha {word.title()} (A{word[0].upper()})." for word in fruit.split()[:other_acronyms])
    index = index_terms(
        papers([f"{defined} We propose Robust Iterative Shift Estimation (RISE).", "Prices rise when demand grows."])
    )
    assert "rise" in set(index.terms["term"])  # the second paper's verb stays a word


def test_a_paper_that_ends_in_a_subject_does_not_cut_the_next_papers_first_phrase():
    ranked = terms_of(["The method is what we", "Graph neural networks predict molecules."])
    assert "graph neural network" in ranked["p_001"]


def test_stock_phrases_are_dropped_and_sub_phrases_rank_below_their_phrase():
    ranked = terms_of(
        [
            "In this paper we achieve state-of-the-art results with sparse autoencoders. Sparse autoencoders "
            "reveal features; extensive experiments show sparse autoencoders work.",
            "Sparse autoencoders and dictionary learning.",
            "Graph transformers on molecules.",
        ]
    )
    first = ranked["p_000"]
    assert "state-of-the-art" not in first and "extensive experiment" not in first
    assert first.index("sparse autoencoder") < first.index("autoencoder")


def test_method_names_are_what_the_paper_introduces():
    names = extract_method_names(
        pl.DataFrame(
            {
                "paper_id": ["a", "b", "c", "d", "e"],
                "text": [
                    "We propose Low-Rank Sparse Attention (Lorsa), a sparse replacement model.",
                    "We introduce CodeBrain, a two-stage model for EEG.",
                    "We propose a lightweight intervention method that corrects reasoning.",
                    "We propose mutual information (MI) estimators for this setting.",
                    "We evaluate on MMLU, MGSM, and XQuAD benchmarks.",
                ],
            }
        )
    )
    assert names.rows() == [
        ("a", "Lorsa", "Low-Rank Sparse Attention"),
        ("b", "CodeBrain", None),
        ("c", None, None),
        ("d", None, None),
        ("e", None, None),
    ]


def test_method_names_read_a_batch_at_a_time_equal_those_read_at_once(monkeypatch):
    # Each of three papers far apart introduces SparseNet: a name three papers write is prior work,
    # though no batch of two papers holds more than one of them.
    texts = seed_abstracts()
    for at in (0, len(texts) // 2, len(texts) - 1):
        texts[at] = "We propose SparseNet, a sparse network. " + texts[at]
    corpus = papers(texts).select("paper_id", "text")
    at_once = extract_method_names(corpus)
    monkeypatch.setattr(names_module, "_PAPERS_PER_BATCH", 2)
    batched = extract_method_names(corpus)
    assert_frame_equal(batched, at_once)
    assert batched["method_name"].drop_nulls().len() >= 10 and "SparseNet" not in batched["method_name"].to_list()
    # The control: where two papers write it, it is still this paper's name.
    assert "SparseNet" in extract_method_names(corpus.slice(0, len(texts) // 2 + 1))["method_name"].to_list()


def test_method_names_strip_small_texts_of_markup_once_and_large_ones_for_each_pass(monkeypatch):
    corpus = papers(seed_abstracts()).select("paper_id", "text")
    strip, stripped = names_module._stripped, []
    monkeypatch.setattr(names_module, "_stripped", lambda batch: stripped.append(batch.height) or strip(batch))
    monkeypatch.setattr(names_module, "_PAPERS_PER_BATCH", 10)
    kept = extract_method_names(corpus)
    batches = -(-corpus.height // 10)
    assert len(stripped) == batches and sum(stripped) == corpus.height
    stripped.clear()
    monkeypatch.setattr(names_module, "SMALL_TEXTS_BYTES", 0)  # every text is large
    assert_frame_equal(extract_method_names(corpus), kept)
    assert len(stripped) == 2 * batches and sum(stripped) == 2 * corpus.height


def test_method_names_come_from_every_introducing_verb_and_the_definitions_anywhere_in_the_text():
    texts = {
        "a later verb inside the first one's window": "We propose a model: we then introduce FooNet, a tiny network.",
        "a concept's acronym, then a name": (
            "We propose mutual information (MI). We also introduce GraphZip, a compressor."
        ),
        "a short form defined earlier": "Sparse Attention Networks (SAN) are fast. We propose SAN, a family of models.",
        "the long form as the name": (
            "We study sparse autoencoders (SAEs). We propose Gated Sparse Autoencoders (GSAEs), a variant."
        ),
        "a parenthesis after the name": "We introduce LoRSA (Low-Rank Sparse Attention) for interpretability.",
        "capitalised words joined by 'of'": "We present the Theory of Mind Benchmark, a suite of tasks.",
        "a clause ends before any name": "We propose a method (see below). FooNet is great.",
        "called": "A framework called RISE, which reads rotations.",
        "a plural acronym": "We introduce RNNs to the task.",
        "our method,": "Our method, PromptZip, compresses prompts.",
    }
    names = extract_method_names(pl.DataFrame({"paper_id": list(texts), "text": list(texts.values())}))
    assert dict(
        zip(names["paper_id"], zip(names["method_name"], names["method_long_form"], strict=True), strict=True)
    ) == {
        "a later verb inside the first one's window": ("FooNet", None),
        "a concept's acronym, then a name": ("GraphZip", None),
        "a short form defined earlier": ("SAN", "Sparse Attention Networks"),
        "the long form as the name": ("GSAE", "Gated Sparse Autoencoders"),
        "a parenthesis after the name": ("LoRSA", None),
        "capitalised words joined by 'of'": ("Theory of Mind Benchmark", None),
        "a clause ends before any name": (None, None),
        "called": ("RISE", None),
        "a plural acronym": (None, None),
        "our method,": ("PromptZip", None),
    }


def test_topics_are_deterministic_and_give_every_paper_a_primary_topic():
    corpus = papers(seed_abstracts())
    first = fit_topics(index_terms(corpus).weights)
    second = fit_topics(index_terms(corpus.sample(fraction=1.0, shuffle=True, seed=3)).weights)
    assert first.paper_topics.equals(second.paper_topics) and first.topics.equals(second.topics)
    primary = first.paper_topics.sort("weight", descending=True).group_by("paper_id").first()
    assert primary.height == 76
    assert first.topics.height == first.selection.filter("chosen")["n_topics"].item() >= 2
    assert first.topics["n_papers"].max() / 76 <= max_topic_share(first.topics.height)


def test_the_table_keeps_each_papers_best_terms_and_the_matrix_its_best_shared_ones():
    index = index_terms(papers(seed_abstracts()), max_terms=5)
    per_paper = index.paper_terms.group_by("paper_id").agg(n=pl.len(), ranks=pl.col("rank").sort())
    assert per_paper["n"].max() == 5 and all(
        ranks.to_list() == list(range(1, len(ranks) + 1)) for ranks in per_paper["ranks"]
    )
    matrix = index.weights.matrix.tocoo()
    assert matrix.shape[0] == 76 and index.weights.paper_ids.is_sorted()
    cells = pl.DataFrame(
        {
            "paper_id": index.weights.paper_ids.gather(matrix.row),
            "term": index.weights.terms[matrix.col],
            "matrix_weight": matrix.data,
        }
    )
    assert cells.group_by("paper_id").len()["len"].max() <= MAX_SHARED_TERMS_PER_PAPER
    doc_freq = cells.join(index.terms.select("term", "doc_freq"), on="term")
    assert doc_freq.height == cells.height and doc_freq["doc_freq"].min() >= 2  # shared terms only
    # Where the table and the matrix hold the same paper and term, they hold the same weight.
    both = cells.join(index.paper_terms, on=["paper_id", "term"])
    assert both.height > 0 and (both["matrix_weight"] - both["weight"]).abs().max() < 1e-9


def assert_same_index(index: terms.TermIndex, expected: terms.TermIndex) -> None:
    assert_frame_equal(index.terms, expected.terms)
    assert_frame_equal(index.paper_terms, expected.paper_terms)
    assert_frame_equal(index.aliases, expected.aliases)
    assert (index.weights.matrix != expected.weights.matrix).nnz == 0 and expected.weights.matrix.nnz > 0


def test_papers_split_counted_and_weighed_a_few_at_a_time_get_the_same_terms_and_weights(monkeypatch):
    whole = index_terms(papers(seed_abstracts()))
    assert whole.aliases.height > 0  # acronyms expanded batch by batch, each with its paper's definition
    monkeypatch.setattr(terms, "_PAPERS_PER_CHUNK", 7)  # 76 papers: 11 chunks, the last one short
    monkeypatch.setattr(ngram_counts, "_TOKENS_PER_PART", 300)  # numbered and counted in parts, cut between papers
    monkeypatch.setattr(term_weights, "_PAPERS_PER_WEIGHING", 5)  # 16 chunks weighed, two at a time, written in order
    assert_same_index(index_terms(papers(seed_abstracts())), whole)


def test_words_are_read_as_the_texts_normalised():
    # The step reads each text as written and normalises it as it splits it: markup, quotes and
    # case make no other words.
    plain = "We propose sparse autoencoders for 'interpretable features' of large language models."
    marked = (
        "We propose *sparse* \\textit{Autoencoders} for \u2018interpretable features\u2019 of Large Language Models."
    )
    ranked = terms_of([plain, marked])
    assert ranked["p_000"] == ranked["p_001"] and "sparse autoencoder" in ranked["p_000"]


def test_ngrams_are_numbered_and_counted_a_part_of_the_corpus_at_a_time(monkeypatch):
    # Numbered over the whole corpus at once, 10^6 papers' n-grams peaked at 7.2 GB (a part's: 5.x GB).
    part_words, number_part = [], ngram_counts._number_part
    monkeypatch.setattr(
        ngram_counts, "_number_part", lambda code, *rest: part_words.append(len(code)) or number_part(code, *rest)
    )
    monkeypatch.setattr(ngram_counts, "_TOKENS_PER_PART", 300)
    corpus = papers(seed_abstracts())
    index_terms(corpus)
    longest_paper = corpus["text"].str.len_chars().max()  # more than its words
    assert len(part_words) > 10 and max(part_words) < 300 + longest_paper


def test_the_words_read_are_held_as_one_spelling_number_each_and_a_run_per_paper(monkeypatch):
    monkeypatch.setattr(terms, "_PAPERS_PER_CHUNK", 7)
    corpus = papers(seed_abstracts())
    words = terms.read_words(corpus)
    n_words = sum(len(batch.spelling) for batch in words.spelled)
    held = sum(batch.spelling.estimated_size() + batch.runs.estimated_size() for batch in words.spelled)
    assert n_words > 10_000 and held <= 4 * n_words + 8 * corpus.height
    assert [batch.runs["paper_idx"].to_list() for batch in words.spelled] == [
        list(range(start, min(start + 7, corpus.height))) for start in range(0, corpus.height, 7)
    ]


def test_the_runs_of_words_per_paper_own_their_rows():
    # A run-length encoding's result kept its batch's paper numbers, one per word, alive (10^6
    # papers: 0.94 GB). Measured in a fresh process: what dropping the runs alone gives back.
    # Pages freed go back to the system at once (no decay: `paperhouse` defers it, which a
    # measurement would have to wait for), so each measurement is of what is alive, at once.
    script = """
import gc, os
os.environ["_RJEM_MALLOC_CONF"] = "dirty_decay_ms:0,muzzy_decay_ms:0"  # before Polars allocates
import polars as pl
from paperhouse.nlp.terms import extraction as terms
rss = lambda: int(open("/proc/self/statm").read().split()[1]) * 4096
terms._PAPERS_PER_CHUNK = 2_000
papers = pl.DataFrame({"text": ["alpha beta, gamma delta. " * 50] * 40_000}).with_row_index("paper_idx")
spelled, _ = terms._spell(papers)
runs = [batch.runs for batch in spelled]
del spelled, papers
gc.collect()
before = rss()
del runs
gc.collect()
print(before - rss())
"""
    freed = int(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert freed < 16 * 2**20, f"{freed / 2**20:.0f} MB"  # the paper numbers: 40,000 papers x 251 words x 4 B = 40 MB


def test_a_paper_with_more_words_than_16_bits_count_gets_its_full_counts():
    # Counts are 16-bit when every paper has fewer words than that, as every accepted abstract has.
    index = index_terms(papers(["Sparse graphs. " * 70_000, "Sparse graphs and dense graphs."]))
    counted = dict(index.paper_terms.filter(pl.col("paper_id") == "p_000").select("term", "occurrences").iter_rows())
    assert counted["sparse graph"] == 70_000 and counted["graph"] == 70_000


def test_terms_do_not_depend_on_the_order_of_the_papers(monkeypatch):
    monkeypatch.setattr(terms, "_PAPERS_PER_CHUNK", 7)
    monkeypatch.setattr(ngram_counts, "_TOKENS_PER_PART", 300)
    monkeypatch.setattr(term_weights, "_PAPERS_PER_WEIGHING", 5)
    corpus = papers(seed_abstracts())
    assert_same_index(index_terms(corpus.sample(fraction=1.0, shuffle=True, seed=1)), index_terms(corpus))


def test_labels_skip_terms_already_shown():
    assert label(["sparse autoencoder", "autoencoder", "feature", "sparse autoencoder feature", "circuit"]) == (
        "sparse autoencoder feature, circuit"
    )
    assert label(["autoencoder", "sparse autoencoder", "probe", "circuit"]) == "sparse autoencoder, probe, circuit"


def test_similar_papers_rank_the_closest_first_and_never_the_paper_itself():
    index = index_terms(
        papers(
            [
                "Sparse autoencoders find interpretable features in language models.",
                "Sparse autoencoders and interpretable features of transformer language models.",
                "Graph neural networks predict molecular properties.",
                "Molecular property prediction with graph neural networks and message passing.",
            ]
        )
    )
    neighbours = similar_papers(index.weights, k=2)
    assert neighbours.schema == pl.Schema(SIMILAR_SCHEMA)
    best = dict(neighbours.filter(pl.col("rank") == 1).select("paper_id", "similar_paper_id").iter_rows())
    assert best == {"p_000": "p_001", "p_001": "p_000", "p_002": "p_003", "p_003": "p_002"}
    assert neighbours.filter(pl.col("paper_id") == pl.col("similar_paper_id")).height == 0


def test_the_inverted_file_search_finds_the_exact_neighbours_when_it_probes_every_cell():
    weights = index_terms(papers(seed_abstracts())).weights
    exact = similar_papers(weights)
    cells = 76 // 10 + 1
    assert similar_papers(weights, exact_limit=10, cell_size=10, probes=cells).equals(exact)
    one_cell = similar_papers(weights, exact_limit=10, cell_size=10, probes=1)
    found = one_cell.join(exact, on=["paper_id", "similar_paper_id"]).height
    assert one_cell["paper_id"].n_unique() == 76 and 0 < found < exact.height
    assert search_recall(weights, exact) == 1.0
    assert search_recall(weights, one_cell) == pytest.approx(found / exact.height)


def test_each_papers_nearest_cells_are_found_holding_one_chunks_distances_at_a_time():
    rng = np.random.default_rng(0)
    vectors, centroids = rng.random((40_000, 8), dtype=np.float32), rng.random((500, 8), dtype=np.float32)
    tracemalloc.start()
    nearest = similar.nearest_cells(vectors, centroids, probes=3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # Ten chunks of 4,096 papers x 500 cells: one chunk's distances and ranking are 16 MB.
    assert peak < 40 * 2**20, f"{peak / 2**20:.0f} MB"
    best = np.argsort(-(vectors[:100] @ centroids.T), axis=1)[:, :3]
    assert np.array_equal(np.sort(nearest[:100], axis=1), np.sort(best, axis=1))


def test_papers_are_projected_a_slice_at_a_time_as_they_would_be_at_once(monkeypatch):
    weights = index_terms(papers(seed_abstracts())).weights
    at_once = similar.lsa_vectors(weights)
    monkeypatch.setattr(similar, "_PROJECT_ROWS", 7)  # 76 papers: 10 slices, the last of 6
    sliced = similar.lsa_vectors(weights)
    assert sliced.shape == at_once.shape == (76, at_once.shape[1]) and np.array_equal(sliced, at_once)
    assert np.allclose(np.linalg.norm(sliced, axis=1), 1, atol=1e-5)


def test_score_at_k_counts_each_gold_keyphrase_once():
    gold = [["sparse autoencoder", "sae"], ["feature"]]
    scores = score_at(["SAEs", "sparse autoencoders", "features", "x"], gold, k=4)
    assert (scores.precision, scores.recall) == (0.5, 1.0)


@pytest.mark.slow
def test_quality_report_meets_the_targets_against_the_baselines():
    report = quality_report()
    assert report["keyphrases"]["abstracts"] >= 20
    assert all(targets_met(report).values()), targets_met(report)


def test_topic_sizes_are_fitted_in_order_until_one_has_no_catch_all_topic(monkeypatch):
    # A fit costs as much as its size: sizes past the first without a catch-all topic are never fitted.
    import_sklearn()
    import sklearn.decomposition

    fitted = []

    class RecordingNMF(sklearn.decomposition.NMF):
        def fit_transform(self, X, y=None, W=None, H=None):
            fitted.append(self.n_components)
            return super().fit_transform(X, y, W, H)

    monkeypatch.setattr(sklearn.decomposition, "NMF", RecordingNMF)
    model = fit_topics(index_terms(papers(seed_abstracts())).weights)
    assert fitted == candidate_sizes(76)[: len(fitted)]
    assert model.selection["n_topics"].to_list() == sorted(fitted)  # every size tried, smallest first
    assert model.selection.filter("chosen")["n_topics"].to_list() == [fitted[-1]] == [model.topics.height]
    # Every size before the kept one had a catch-all topic.
    for k, share in model.selection.filter(~pl.col("chosen")).select("n_topics", "largest_share").iter_rows():
        assert share > max_topic_share(k), (k, share)


def test_empty_corpus_gives_empty_typed_tables():
    index = index_terms(pl.DataFrame(schema={"paper_id": pl.String, "text": pl.String}))
    assert index.terms.schema == pl.Schema(TERM_SCHEMA) and index.paper_terms.schema == pl.Schema(PAPER_TERM_SCHEMA)
    model = fit_topics(index.weights)
    assert model.paper_topics.schema == pl.Schema(PAPER_TOPIC_SCHEMA) and model.paper_topics.height == 0
    assert model.topic_terms.schema == pl.Schema(TOPIC_TERM_SCHEMA) and model.topic_terms.height == 0


def _analyse_with_slow_names(monkeypatch, large: bool) -> tuple[list[dict[str, bool]], list[bool], list[bool]]:
    """Analyse 40 seed papers with names found slower than the terms' reading, as at 10^6 papers
    (``large`` texts; small ones: slower than the start of the counting), by events, not seconds:
    whether the texts given to the words and to the names are still alive, and whether the names
    are found, when the counting starts; and whether the words were read when the names started."""
    given, alive_while_counting, names_found_while_counting, words_read_when_names_start = {}, [], [], []
    words_read, names_found, names_started, counting = (threading.Event() for _ in range(4))
    wait_s = 300  # a safety net only: each wait below ends when what it waits for happens

    def read_words(frame: pl.DataFrame) -> terms.PaperWords:
        given["words"] = weakref.ref(frame)
        if large:  # started beside the reading, the names start first
            names_started.wait(timeout=wait_s)
        words = terms.read_words(frame)
        words_read.set()
        return words

    def slow_method_names(frame: pl.DataFrame) -> pl.DataFrame:
        words_read_when_names_start.append(words_read.is_set())
        given["names"] = weakref.ref(frame)
        names_started.set()
        # Slower than the reading of the words (large texts: the counting must wait for the names),
        # or than the start of the counting (small ones: it need not).
        (words_read if large else counting).wait(timeout=wait_s)
        names = extract_method_names(frame)
        names_found.set()
        return names

    def ngram_counts(*args):
        alive_while_counting.append({reader: ref() is not None for reader, ref in given.items()})
        names_found_while_counting.append(names_found.is_set())
        counting.set()
        return real_ngram_counts(*args)

    real_ngram_counts = terms.count_ngrams
    monkeypatch.setattr(analysis, "read_words", read_words)
    monkeypatch.setattr(analysis, "extract_method_names", slow_method_names)
    monkeypatch.setattr(terms, "count_ngrams", ngram_counts)
    # Handed over, not held: pytest's rewriting of an assert would keep the argument alive.
    result = analysis.analyse(papers(seed_abstracts()[:40]))
    assert result.index.terms.height > 0 and result.names.height == 40
    return alive_while_counting, names_found_while_counting, words_read_when_names_start


def test_analyse_lets_go_of_large_texts_before_it_counts_the_terms(monkeypatch):
    # At 10^6 papers the texts are 3.6 GB: held through the counting, they made most of its peak.
    monkeypatch.setattr(analysis, "SMALL_TEXTS_BYTES", 0)  # these texts count as large
    alive, names_found, words_read_first = _analyse_with_slow_names(monkeypatch, large=True)
    assert alive == [{"words": False, "names": False}] and names_found == [True]
    assert words_read_first == [False]  # the names are found beside the reading, so as not to hold up the counting


def test_analyse_finds_the_names_of_small_texts_beside_the_indexing_of_the_terms(monkeypatch):
    # At 10^5 papers (0.15 GB of texts) the reading of the words keeps both cores busy on its own;
    # the indexing does not. Found beside the reading, the names made the step 1.8 s slower.
    alive, names_found, words_read_first = _analyse_with_slow_names(monkeypatch, large=False)
    assert words_read_first == [True]
    assert names_found == [False] and not alive[0]["words"]


def test_the_counts_are_let_go_before_the_weighed_rows_become_the_result(monkeypatch):
    # At 10^6 papers the counts are 2.5 GB: held while the result was built, they made the weighing's peak.
    weighed_parts = []

    def weigh(parts, *args):
        weighed_parts.append(parts)
        return real_weigh(parts, *args)

    real_weigh = terms.weigh
    monkeypatch.setattr(terms, "weigh", weigh)
    assert index_terms(papers(seed_abstracts()[:40])).paper_terms.height > 0
    assert weighed_parts == [[]]


def test_a_word_that_ends_its_noun_phrases_outweighs_one_that_only_modifies():
    # Same counts, same papers: only "supervision" ends the chunk "erroneous supervision".
    ranked = index_terms(papers(["Erroneous supervision.", "Erroneous supervision.", "Graph kernels."])).paper_terms
    weight = dict(ranked.filter(pl.col("paper_id") == "p_000").select("term", "weight").iter_rows())
    assert weight["supervision"] > 2 * weight["erroneous"] > 0


def test_a_corpus_of_stop_words_and_punctuation_has_no_terms_but_still_analyses():
    corpus = papers(["We show that it is so.", "It is; and we use them (as they are)!", "42 -- ..."])
    index = index_terms(corpus)
    assert index.terms.height == 0 and index.paper_terms.schema == pl.Schema(PAPER_TERM_SCHEMA)
    analysis = analyse(corpus)
    assert analysis.model.topics.height == 0 and analysis.similar.height == 0
    assert analysis.names["paper_id"].to_list() == corpus["paper_id"].to_list()


def test_a_corpus_without_phrases_of_the_longest_length_still_gets_every_shorter_term():
    # Counted one length at a time, a length that no chunk reaches (here 3 and 4) has no n-grams.
    found = terms_of(["Graph networks. Sparse coding.", "Graph networks, sparse coding."])
    expected = {"graph network", "sparse coding", "graph", "network", "sparse", "coding"}
    assert {paper: set(terms) for paper, terms in found.items()} == {"p_000": expected, "p_001": expected}


def test_terms_topics_similar_papers_and_names_computed_together_equal_each_computed_alone():
    corpus = papers(seed_abstracts())
    together = analyse(corpus)
    index = index_terms(corpus)
    assert_frame_equal(together.index.paper_terms, index.paper_terms)
    assert_frame_equal(together.model.paper_topics, fit_topics(index.weights).paper_topics)
    assert_frame_equal(together.similar, similar_papers(index.weights))
    names = extract_method_names(corpus.select("paper_id", "text"))
    assert names["method_name"].drop_nulls().len() > 0  # the seeds name methods: the comparison has content
    assert_frame_equal(together.names, names)


def test_scikit_learn_is_imported_once_the_names_are_found(monkeypatch):
    # Imported first, its 141 MB sat under the reading of the words beside the names, the corpus
    # step's peak at 10^6 papers.
    calls = []

    def method_names(texts: pl.DataFrame) -> pl.DataFrame:
        calls.append("names")
        return extract_method_names(texts)

    def sklearn() -> None:
        calls.append("scikit-learn")
        import_sklearn()

    monkeypatch.setattr(analysis, "extract_method_names", method_names)
    monkeypatch.setattr(analysis, "import_sklearn", sklearn)
    analyse(papers(seed_abstracts()[:40]))
    assert calls[0] == "names" and "scikit-learn" in calls


def test_the_neighbour_search_beside_the_topic_model_runs_on_one_openmp_thread(monkeypatch):
    from threadpoolctl import threadpool_info

    from paperhouse.nlp import analysis

    openmp_threads = []

    def search(weights):
        openmp_threads.extend(info["num_threads"] for info in threadpool_info() if info["user_api"] == "openmp")
        return similar_papers(weights)

    monkeypatch.setattr(analysis, "similar_papers", search)
    analyse(papers(seed_abstracts()))
    assert openmp_threads and set(openmp_threads) == {1}
