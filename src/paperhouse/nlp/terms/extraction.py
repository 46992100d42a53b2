"""Keyphrases of each paper: candidate phrases, normalised, merged with their acronyms, weighted.

Candidates are runs of one to four words between stop words and punctuation ("graph
neural network", never "network for"), singularised. Then:

- acronyms defined in a paper ("sparse autoencoders (SAEs)") are expanded in place, so
  "SAE" and "sparse autoencoder" count as one term; papers that use a defined acronym
  without defining it get the corpus' most common expansion;
- spelling variants ("fine-tuning", "finetuning", "fine tuning"; "generalisation",
  "generalization") become one term, shown in its most frequent spelling;
- stock phrases of abstracts ("state of the art", "extensive experiment") and words that
  say nothing about a topic ("model", "performance") are dropped;
- the weight is TF-IDF, halved for a phrase whose every occurrence sits inside a longer,
  established phrase of the same paper ("autoencoder" inside "sparse autoencoder"), and
  L2-normalised per paper; rank 1 is a paper's most characteristic term. The table keeps a
  paper's ``max_terms`` best (its long tail of incidental n-grams would multiply the table
  without saying more about it). ``TermIndex.weights`` holds, as a sparse matrix, each
  paper's 30 best terms among those it shares with another paper: what topics and similar
  papers compare (a paper's best terms are often its own, which link it to nothing).

Papers are split into words, their acronyms expanded, their n-grams counted and their terms
weighed a batch of papers at a time, in paper order; what is global (the numbering of words and
n-grams, document frequencies, majority long forms, spelling merges) is summed over the batches.
Polars expressions for text, NumPy arrays of integer codes for counting and ranking (words,
n-grams and (paper, term) pairs are numbered, so counts and ranks are runs of one sorted array).
Python loops only touch the distinct words (singulars) and the texts that may define an acronym.
At 10^6 papers the (paper, n-gram) counts, 12 bytes each, are most of the memory.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

from paperhouse.common.arrays import FirstSeenNumbers
from paperhouse.ingest.normalize import normalized_text
from paperhouse.nlp.terms.acronym_expansion import (
    TOKEN,
    AcronymCodes,
    acronym_aliases,
    acronym_codes,
    acronym_definitions,
    acronym_expansions,
    expand_acronyms,
    position_in,
)
from paperhouse.nlp.terms.ngram_counts import count_ngrams, number_ngrams
from paperhouse.nlp.terms.table import describe_terms, merge_spellings, stock_terms, term_sums, with_capital_uses
from paperhouse.nlp.terms.weights import (
    MAX_SHARED_TERMS_PER_PAPER,
    PAPER_TERM_SCHEMA,
    TermWeights,
    phrase_recurrence,
    weigh,
)
from paperhouse.nlp.terms.words import (
    ADVERB,
    BEFORE_VERB,
    FUNCTION_WORDS,
    MARKUP_WORDS,
    NOUNS_IN_LY,
    STOPWORDS,
    lemma_column,
    singular,
    variant_key,
    verb_lemmas,
    verb_uses,
)

# The public names of the terms, wherever they live.
__all__ = [
    "ALIAS_KINDS",
    "ALIAS_SCHEMA",
    "FUNCTION_WORDS",
    "MAX_SHARED_TERMS_PER_PAPER",
    "MAX_TERMS_PER_PAPER",
    "PAPER_TERM_SCHEMA",
    "STOPWORDS",
    "TERM_KINDS",
    "TERM_SCHEMA",
    "PaperWords",
    "TermIndex",
    "TermWeights",
    "capitalised_words",
    "count_paper_ngrams",
    "index_terms",
    "index_words",
    "phrase_recurrence",
    "read_words",
    "singular",
    "spell",
    "variant_key",
    "verb_lemmas",
    "verb_uses",
    "word_pieces",
]


TERM_SCHEMA = {"term": pl.String, "kind": pl.String, "n_words": pl.Int32, "doc_freq": pl.Int32, "idf": pl.Float64}


ALIAS_SCHEMA = {"alias": pl.String, "term": pl.String, "alias_kind": pl.String, "papers": pl.Int32}


TERM_KINDS = ("phrase", "acronym", "word")


MAX_TERMS_PER_PAPER = 30


ALIAS_KINDS = ("acronym", "spelling")


# A parenthesis holding one token is an acronym definition, a citation year or a label: no term.
_SINGLE_TOKEN_PARENTHESIS = r"\(\s*[^\s()]{1,15}\s*\)"


# The first papers (in paper_idx order, whatever the batches) whose words tell the verbs.
VERB_SAMPLE_PAPERS = 20_000


_NO_VERB_USES = pl.DataFrame(schema={"token": pl.String, "uses": pl.Int64, "verb_uses": pl.Int64})


# A capitalised short form as written (SAE, CoT, GPT-4): at least two capitals.
_CAPITALISED = r"\b[A-Za-z0-9]*[A-Z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*\b"


# Papers split into words at once: their words as strings are held a batch at a time.
_PAPERS_PER_CHUNK = 20_000


@dataclass(frozen=True)
class TermIndex:
    terms: pl.DataFrame  # TERM_SCHEMA: one row per term
    paper_terms: pl.DataFrame  # PAPER_TERM_SCHEMA: each paper's max_terms best terms, ranked
    aliases: pl.DataFrame  # ALIAS_SCHEMA: acronyms and spellings that were merged into a term
    # Each paper's weights on its best shared terms; None where they stay with the engine that
    # computed them (Spark: ``SparkTermIndex.weights``).
    weights: TermWeights | None


_EMPTY_INDEX = TermIndex(
    pl.DataFrame(schema=TERM_SCHEMA),
    pl.DataFrame(schema=PAPER_TERM_SCHEMA),
    pl.DataFrame(schema=ALIAS_SCHEMA),
    TermWeights(csr_matrix((0, 0)), pl.Series("paper_id", [], pl.String), np.array([], dtype=str)),
)


def index_terms(papers: pl.DataFrame, max_words: int = 4, max_terms: int = MAX_TERMS_PER_PAPER) -> TermIndex:
    """``paper_id`` and ``text`` (as written) of each paper -> its ranked terms."""
    return index_words(read_words(papers), max_words, max_terms)


class SpelledBatch(NamedTuple):
    """A batch of papers' words and punctuation, in order, as the numbers of their spellings, and
    each paper's run of them: a paper number per word held 1 GB more at 10^6 papers."""

    spelling: pl.Series  # UInt32
    runs: pl.DataFrame  # ``paper_idx`` and ``pieces``: the papers in order, each with its number of words


@dataclass(frozen=True)
class PaperWords:
    """What the terms need of the texts, read in one pass: the words as numbers of their spellings.
    Once it is read the texts can go: at 10^6 papers they are 3.6 GB, these a third of that."""

    paper_index: pl.DataFrame  # ``paper_idx``, ``paper_id``: a paper's number is its id's rank
    spelled: list[SpelledBatch]  # ``spell``'s batches; ``index_words`` empties it as it codes them
    spellings: pl.DataFrame  # ``spell``'s spellings
    expansions: pl.DataFrame  # ``expansions``: the acronyms to expand
    capitalised: pl.DataFrame  # ``capitalised_words``


def read_words(papers: pl.DataFrame) -> PaperWords:
    """``paper_id`` and ``text`` (as written) of each paper -> its words in codes."""
    # Acronym definitions are found by a Python loop over the texts that may hold one: on a second
    # thread it runs while the tokeniser's Polars work, which leaves the interpreter free, runs here.
    with ThreadPoolExecutor(max_workers=1) as pool:
        definitions = pool.submit(acronym_definitions, papers, _PAPERS_PER_CHUNK)
        capitalised = pool.submit(capitalised_words, papers)
        # A paper is numbered by its id's position among the sorted ids: a rank, not a join with the
        # ids, which would copy every text. The index of ids is read off the numbered rows.
        papers = papers.with_columns(paper_idx=pl.col("paper_id").rank("dense").cast(pl.UInt32) - 1)
        paper_index = papers.select("paper_idx", "paper_id").unique("paper_idx").sort("paper_idx")
        spelled, spellings = spell(papers)
        expansions = acronym_expansions(definitions.result(), papers)
        return PaperWords(paper_index, spelled, spellings, expansions, capitalised.result())


def index_words(
    words: PaperWords,
    max_words: int = 4,
    max_terms: int = MAX_TERMS_PER_PAPER,
    before_counting: Callable[[], object] = lambda: None,
) -> TermIndex:
    """The papers' words (``read_words``) -> their ranked terms. ``before_counting`` is called
    once the words are coded, before the counting of their n-grams, the indexing's peak."""
    counted = count_paper_ngrams(words, max_words, before_counting)
    if counted is None:
        return _EMPTY_INDEX
    paper_ids, expansions = words.paper_index["paper_id"], words.expansions
    parts, vocabulary = counted
    parts, spellings = merge_spellings(parts, vocabulary, stock_terms(vocabulary))
    sums = term_sums(parts, vocabulary.height).join(vocabulary, on="term_idx")
    terms = describe_terms(with_capital_uses(sums, words.capitalised), len(paper_ids))
    paper_terms, weights = weigh(parts, terms, vocabulary, paper_ids, max_terms)
    aliases = pl.concat([acronym_aliases(expansions, terms), spellings.join(terms.select("term"), on="term")])
    return TermIndex(
        terms=terms.select(list(TERM_SCHEMA)).sort("term").cast(TERM_SCHEMA),
        paper_terms=paper_terms,
        aliases=aliases.unique(["alias", "term"]).sort("alias", "term").cast(ALIAS_SCHEMA),
        weights=weights,
    )


def count_paper_ngrams(
    words: PaperWords, max_words: int = 4, before_counting: Callable[[], object] = lambda: None
) -> tuple[list[pl.DataFrame], pl.DataFrame] | None:
    """The papers' words (``read_words``) -> the parts of their (paper, n-gram) counts
    (``number_ngrams``: ``paper_idx``, ``term_idx``, ``count``, ``heads``, in paper order) and the
    ``vocabulary`` they index; None when the papers hold no word that a term could start with.

    Every count is within one paper: only the papers' acronym expansions and the spellings'
    verbs, both in ``words``, come from the rest of the corpus (the Spark engine counts a
    partition of papers at a time with the corpus' expansions and verbs)."""
    if words.spellings.height == 0:  # no papers, or papers without a word
        return None
    spellings = words.spellings
    acronyms = acronym_codes(words.expansions, spellings["lemma"].unique().sort(), words.paper_index)
    tokens = _tokens(words.spelled, spellings, acronyms)
    if tokens.height == 0:  # nothing but stop words and punctuation
        return None
    before_counting()
    counts, texts = count_ngrams(tokens, acronyms.lemmas, max_words)
    del tokens  # 12 bytes per word of the corpus: gone before the counts become frames
    return number_ngrams(counts, texts)


def spell(papers: pl.DataFrame, verbs: pl.Series | None = None) -> tuple[list[SpelledBatch], pl.DataFrame]:
    """Each batch of ``_PAPERS_PER_CHUNK`` papers' words and punctuation, in order, as the numbers
    of their spellings (``SpelledBatch``), and the spellings: ``spelling``, ``token``,
    ``lemma``, ``ends_chunk``, ``before_verb``, in number order.

    ``verbs`` (``verb_lemmas``) are read off the first ``VERB_SAMPLE_PAPERS`` papers here unless
    given: the Spark engine reads them off the whole corpus' sample and spells a partition at a time.

    Papers are taken in ``paper_idx`` order, whatever the order of the rows: the counting and
    weighing that follow cut the corpus between papers, in that order. Words as strings are held a
    batch at a time: each batch is split once and its spellings are numbered in the order they
    first appear."""
    spelled, spelling_numbers, uses = [], FirstSeenNumbers(pl.String), []
    for start in range(0, papers.height, _PAPERS_PER_CHUNK):  # a dense rank: paper_idx < height
        batch = papers.filter(pl.col("paper_idx").is_between(start, start + _PAPERS_PER_CHUNK - 1)).sort("paper_idx")
        pieces = word_pieces(batch).collect()
        if verbs is None and start < VERB_SAMPLE_PAPERS:
            uses.append(verb_uses(pieces.filter(pl.col("paper_idx") < VERB_SAMPLE_PAPERS)))
        # Counted by a group-by, whose result owns its rows: a run-length encoding's kept the batch's
        # paper numbers, one per word, alive (10^6 papers: 0.94 GB).
        runs = pieces.group_by("paper_idx", maintain_order=True).agg(pieces=pl.len())
        spelled.append(SpelledBatch(spelling_numbers.number(pieces["token"]), runs))
    if verbs is None:
        verbs = verb_lemmas(pl.concat([_NO_VERB_USES, *uses]))
    # Words are classified and singularised once per distinct spelling, then looked up by number.
    numbered = spelling_numbers.values.rename("token").to_frame().with_row_index("spelling")
    spellings = (
        lemma_column(numbered, "token")
        .sort("spelling")
        .with_columns(
            ends_chunk=~pl.col("token").str.contains(r"^\p{L}")
            | pl.col("token").is_in(STOPWORDS)
            | (pl.col("token").str.len_chars() < 2)
            | (pl.col("token").str.contains(ADVERB) & ~pl.col("token").is_in(NOUNS_IN_LY))
            | (pl.col("lemma").is_in(verbs.implode()) & ~pl.col("token").str.ends_with("ing")),
            before_verb=pl.col("token").is_in(BEFORE_VERB),
        )
    )
    return spelled, spellings


def _tokens(spelled: list[SpelledBatch], spellings: pl.DataFrame, acronyms: AcronymCodes) -> pl.DataFrame:
    """One row per word of every paper, in order, acronyms expanded: ``paper_idx``, ``code`` (its
    lemma's position in ``acronyms.lemmas``) and ``starts_chunk``: whether the word starts a
    stop-word-free run, as a paper's first word always does.

    ``spelled`` is emptied as its batches are coded: it is 4 bytes per word, the result 9.

    A markup word (``MARKUP_WORDS``: ``gt`` of a ``&gt;``, ``sub`` of a ``<sub>`` that a reader's
    repair missed) that is still there once acronyms are expanded (a "GT" a paper defines is
    "ground truth") ends a chunk as a stop word does: it is never a term, nor inside one."""
    spellings = spellings.with_columns(code=position_in(pl.col("lemma"), acronyms.lemmas))
    markup = np.flatnonzero(acronyms.lemmas.is_in(list(MARKUP_WORDS)).to_numpy()).astype(np.uint32)
    flag = lambda name: pl.lit(spellings[name]).gather(pl.col("spelling"))  # noqa: E731
    coded = []
    while spelled:
        tokens = (
            _spelled_words(spelled.pop(0))
            .lazy()
            .with_columns(starts_paper=pl.col("paper_idx") != pl.col("paper_idx").shift(1, fill_value=-1))
            .with_columns(
                is_break=flag("ends_chunk") | (flag("before_verb").shift(1, fill_value=False) & ~pl.col("starts_paper"))
            )
            .with_columns(chunk=(pl.col("is_break") | pl.col("starts_paper")).cum_sum())
            .filter(~pl.col("is_break"))
            .select(
                "paper_idx",
                code=pl.lit(spellings["code"]).gather(pl.col("spelling")),
                starts_chunk=pl.col("chunk") != pl.col("chunk").shift(1, fill_value=-1),
            )
            .collect()
        )
        coded.append(_without_markup(expand_acronyms(tokens, acronyms), markup))
    # One chunk per column: the counting then reads them as arrays without a copy (1.1 GB at 10^6 papers).
    return pl.concat(coded, rechunk=True)


def _without_markup(tokens: pl.DataFrame, codes: np.ndarray) -> pl.DataFrame:
    """The tokens without those of ``codes``, each a break: the token after one starts a chunk.
    A batch that holds none is handed back as it is."""
    if len(codes) == 0:
        return tokens
    is_markup = np.isin(tokens["code"].to_numpy(), codes)
    if not is_markup.any():
        return tokens
    after_markup = np.concatenate([[False], is_markup[:-1]])
    return tokens.with_columns(starts_chunk=pl.col("starts_chunk") | after_markup).filter(~is_markup)


def _spelled_words(batch: SpelledBatch) -> pl.DataFrame:
    """``paper_idx`` and ``spelling`` of each word of a batch, in order."""
    paper_idx = np.repeat(batch.runs["paper_idx"].to_numpy(), batch.runs["pieces"].to_numpy())
    return pl.DataFrame({"paper_idx": paper_idx, "spelling": batch.spelling})


# The name tests/test_terms_topics.py reaches for.
_spell = spell


def word_pieces(papers: pl.DataFrame) -> pl.LazyFrame:
    """``paper_idx`` and ``token``: each word and punctuation mark of the papers, in order.

    The texts are normalised here, a batch at a time, rather than read normalised from the
    warehouse: both texts of 10^6 papers read at once, 3.1 GB, made the corpus step's peak."""
    return (
        papers.lazy()
        .select(
            "paper_idx",
            # One pass: a parenthesis holding one token, a punctuation mark, or a word.
            token=normalized_text(pl.col("text")).str.extract_all(
                f"{_SINGLE_TOKEN_PARENTHESIS}|[.,;:!?()\\[\\]\"'/|]|{TOKEN}"
            ),
        )
        .explode("token")
        .drop_nulls("token")
    )


CAPITALISED_SCHEMA = {"word": pl.String, "capital_uses": pl.Int64}


def capitalised_words(papers: pl.DataFrame) -> pl.DataFrame:
    """``word`` (lower case, a plural's "s" off) and ``capital_uses``: how often the texts write each
    word in capitals (SAE, CoT, GPT-4); ``describe_terms`` weighs them against all its uses."""
    written = papers.lazy().select(word=pl.col("text").str.extract_all(_CAPITALISED)).explode("word").drop_nulls()
    # Mostly capitals (GAN, LoRA, CoT): a name in camel case (MixStyle, CryptoGCN) is no acronym.
    mostly = 2 * pl.col("word").str.count_matches(r"[A-Z]") > pl.col("word").str.count_matches(r"[A-Za-z]")
    words = written.filter(mostly).select(pl.col("word").str.to_lowercase().str.replace(r"s$", ""))
    return words.group_by("word").agg(capital_uses=pl.len()).sort("word").collect().cast(CAPITALISED_SCHEMA)
