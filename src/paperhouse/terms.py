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

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

from paperhouse.acronyms import POSSIBLE_DEFINITION, find_definitions
from paperhouse.arrays import ColumnBuffer, FirstSeenNumbers, slices, stable_argsort
from paperhouse.normalize import normalized_text

FUNCTION_WORDS = frozenset(
    """a about above across after again against all almost also although always among an and another any are
    around as at be because been before being below between both but by can could did do does doing done down
    due during each either else enough especially etc even ever every few for from further had has have having
    here how however i if in into is it its itself just least less many may might more most much must my
    neither no nor not now of off often on once one only onto or other others otherwise our ours out over own
    per perhaps rather same several shall she should since so some such than that the their theirs them then
    there thereby therefore these they this those though through thus to too toward towards under until up upon
    us very via was we well were what whatever when where whereas whether which while who whom whose why will
    with within without would yet you your""".split()
)
# Words of how abstracts talk, not of what they are about.
STOPWORDS = FUNCTION_WORDS | frozenset(
    """paper work approach method methods propose proposes proposed present presents introduce introduces
    introduced show shows shown demonstrate demonstrates study studies result results use used using based
    new novel existing first second third two three various different significant significantly extensive
    experiment experiments achieve achieves achieved provide provides enable enables allow allows able
    further key large small high low well-known""".split()
)
# Phrases about the paper rather than its topic; matched on the variant key (see variant_key).
STOCK_PHRASES = frozenset(
    _phrase.replace(" ", "").replace("-", "")
    for _phrase in """state-of-the-art;sota;experimental result;empirical result;theoretical result;main result;
    wide range;wide variety;broad range;extensive experiment;comprehensive experiment;experimental evaluation;
    empirical evaluation;empirical study;extensive evaluation;recent work;recent advance;recent year;prior work;
    previous work;related work;future work;code;source code;github;large margin;substantial improvement;
    consistent improvement;strong performance;superior performance;competitive performance;better performance;
    significant improvement;promising result;real world;real-world;paper;article;furthermore;moreover;
    additionally;specifically;finally;notably;importantly;respectively;e.g;i.e;et al""".replace("\n", " ").split(";")
)
# Words that name no topic on their own; a phrase made only of them is dropped too.
GENERIC_WORDS = frozenset(
    """model task performance framework problem setting challenge issue way case effect effectiveness
    efficiency improvement limitation insight analysis evaluation benchmark dataset data baseline technique
    strategy solution design system process mechanism property component module step stage level type kind
    form number amount set range variety order term part aspect factor goal objective fact end line example
    instance need lack gap question answer finding contribution impact role ability capability scenario
    application domain field area variant version extension general specific simple effective efficient
    robust strong better best good state art standard common typical previous recent current prior
    related certain particular overall whole main major minor important crucial critical fundamental
    essential practical empirical theoretical experimental comprehensive systematic consistent
    substantial superior competitive promising remarkable notable substantially consistently
    remain remains make makes made often across yield yields reveal reveals find finds found
    state-of-the-art sota""".split()
)
TERM_SCHEMA = {"term": pl.String, "kind": pl.String, "n_words": pl.Int32, "doc_freq": pl.Int32, "idf": pl.Float64}
PAPER_TERM_SCHEMA = {
    "paper_id": pl.String, "term": pl.String, "occurrences": pl.Int32, "weight": pl.Float64, "rank": pl.Int32
}
ALIAS_SCHEMA = {"alias": pl.String, "term": pl.String, "alias_kind": pl.String, "papers": pl.Int32}
TERM_KINDS = ("phrase", "acronym", "word")
MAX_TERMS_PER_PAPER = 30
# What links papers (topics, similar papers) are the terms they share: each paper's best 30 of those.
MAX_SHARED_TERMS_PER_PAPER = 30
ALIAS_KINDS = ("acronym", "spelling")

_TOKEN = r"\p{L}[\p{L}\p{N}]*(?:-[\p{L}\p{N}]+)*"
# A parenthesis holding one token is an acronym definition, a citation year or a label: no term.
_SINGLE_TOKEN_PARENTHESIS = r"\(\s*[^\s()]{1,15}\s*\)"
_IRREGULAR_PLURALS = {"data": "data", "analyses": "analysis", "hypotheses": "hypothesis", "indices": "index",
                      "matrices": "matrix", "vertices": "vertex", "criteria": "criterion", "phenomena": "phenomenon",
                      "lens": "lens", "means": "means", "series": "series", "species": "species"}
# Adverbs ("coherently", "empirically") end a phrase like stop words; these few nouns end in -ly too.
_ADVERB = r"^\p{L}{3,}ly$"
_NOUNS_IN_LY = ("anomaly", "family", "assembly", "monopoly", "supply", "italy", "butterfly", "reply", "july")
# The word after a subject or a modal is a verb ("we deactivate", "can restore"): it starts no phrase.
_BEFORE_VERB = ("we", "they", "can", "could", "may", "might", "will", "would", "should", "must", "cannot")
# Verbs, read off the corpus: a word used as one in most of its uses, right after a subject, a modal
# or "to", or right before an article or an object ("address the", "we tackle"), breaks a phrase
# wherever it stands ("pick independent money manager" is "independent money manager"). Words in
# -ing stay: "learning a policy" is a verb, "reinforcement learning" a term.
_VERB_AFTER = (*_BEFORE_VERB, "it", "which", "also", "to", "not")
_VERB_BEFORE = ("the", "a", "an", "our", "their", "its", "this", "these", "those", "such", "them", "it", "us",
                "both", "each", "how", "whether", "that")
_VERB_MIN_USES = 5
# The first papers (in paper_idx order, whatever the batches) whose words tell the verbs.
_VERB_SAMPLE_PAPERS = 20_000
_NO_VERB_USES = pl.DataFrame(schema={"token": pl.String, "uses": pl.Int64, "verb_uses": pl.Int64})
# A phrase ends in its head noun, never in a participle: "aliasing effect associated" is cut
# from "aliasing effects associated with ...". Nouns in -eed (speed, seed, need) are nouns.
_ENDS_IN_PARTICIPLE = r" \p{L}+[^e]ed$"
_KEEP_S = re.compile(r"(ss|us|is|ics|ous|ness|sis|xis|as|ys|'s)$")
# A capitalised short form as written (SAE, CoT, GPT-4): at least two capitals.
_CAPITALISED = r"\b[A-Za-z0-9]*[A-Z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*\b"
# Weighting beyond TF-IDF (see _weigh), chosen on the dev split of evaluation/keyphrase_gold.jsonl.
_SUBSUMED_DISCOUNT = 0.5
_MODIFIER_FLOOR = 0.4
_PHRASE_BONUS = 1.6
# Papers split into words at once: their words as strings are held a batch at a time.
_PAPERS_PER_CHUNK = 20_000
# Papers weighed at once, on each of two threads: two chunks this size held what one twice the
# size did (10^5 papers: a peak of 1.62 GB against 1.66 GB).
_PAPERS_PER_WEIGHING = 10_000
# The n-grams of this many words of the corpus (whole papers) are numbered and counted at a time.
_TOKENS_PER_PART = 1 << 23
# An n-gram id's low bits number it among the n-grams of its length; the bits above hold the length.
_NUMBER_BITS = 29
# Weights are rounded to 8 decimals, so they sort exactly as integers below 2**27.
_WEIGHT_STEPS = np.uint64(10**8)
# The regex engine scans for a few dozen short keys at once at full speed but slows tenfold past
# that (16 keys: 0.3 s on 100k abstracts, 64: 4 s), so keys are looked for 16 at a time.
_KEYS_PER_PATTERN = 16


# One part of the (paper, n-gram) counts: sorted (paper << 32 | n-gram id) keys, counts, heads.
_Counts = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class TermWeights:
    """Each paper's weights on its strongest terms shared with another paper, as a sparse
    papers x terms matrix: what the topic model and similar papers compare."""

    matrix: csr_matrix  # rows in paper_ids order, columns in terms order
    paper_ids: pl.Series  # sorted
    terms: np.ndarray  # sorted


@dataclass(frozen=True)
class TermIndex:
    terms: pl.DataFrame  # TERM_SCHEMA: one row per term
    paper_terms: pl.DataFrame  # PAPER_TERM_SCHEMA: each paper's max_terms best terms, ranked
    aliases: pl.DataFrame  # ALIAS_SCHEMA: acronyms and spellings that were merged into a term
    weights: TermWeights  # each paper's weights on its best shared terms


_EMPTY_INDEX = TermIndex(
    pl.DataFrame(schema=TERM_SCHEMA), pl.DataFrame(schema=PAPER_TERM_SCHEMA), pl.DataFrame(schema=ALIAS_SCHEMA),
    TermWeights(csr_matrix((0, 0)), pl.Series("paper_id", [], pl.String), np.array([], dtype=str)),
)


def singular(word: str) -> str:
    """A conservative English singular: wrong guesses hurt more than missed ones."""
    last = word.rsplit("-", 1)[-1]
    head = word[: len(word) - len(last)]
    if last in _IRREGULAR_PLURALS:
        return head + _IRREGULAR_PLURALS[last]
    if len(last) <= 3 or _KEEP_S.search(last):
        return word
    if last.endswith("ies") and len(last) > 4:
        return head + last[:-3] + "y"
    if last.endswith(("ches", "shes", "xes", "sses")) or re.search(r".(ias|us)es$", last):
        return head + last[:-2]
    if last.endswith("s"):
        return head + last[:-1]
    return word


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
    spelled: list[SpelledBatch]  # ``_spell``'s batches; ``index_words`` empties it as it codes them
    spellings: pl.DataFrame  # ``_spell``'s spellings
    expansions: pl.DataFrame  # ``_expansions``: the acronyms to expand
    capitalised: pl.Series  # ``_capitalised_words``


def read_words(papers: pl.DataFrame) -> PaperWords:
    """``paper_id`` and ``text`` (as written) of each paper -> its words in codes."""
    # Acronym definitions are found by a Python loop over the texts that may hold one: on a second
    # thread it runs while the tokeniser's Polars work, which leaves the interpreter free, runs here.
    with ThreadPoolExecutor(max_workers=1) as pool:
        definitions = pool.submit(_acronym_definitions, papers)
        capitalised = pool.submit(_capitalised_words, papers)
        # A paper is numbered by its id's position among the sorted ids: a rank, not a join with the
        # ids, which would copy every text. The index of ids is read off the numbered rows.
        papers = papers.with_columns(paper_idx=pl.col("paper_id").rank("dense").cast(pl.UInt32) - 1)
        paper_index = papers.select("paper_idx", "paper_id").unique("paper_idx").sort("paper_idx")
        spelled, spellings = _spell(papers)
        expansions = _expansions(definitions.result(), papers)
        return PaperWords(paper_index, spelled, spellings, expansions, capitalised.result())


def index_words(words: PaperWords, max_words: int = 4, max_terms: int = MAX_TERMS_PER_PAPER,
                before_counting: Callable[[], object] = lambda: None) -> TermIndex:
    """The papers' words (``read_words``) -> their ranked terms. ``before_counting`` is called
    once the words are coded, before the counting of their n-grams, the indexing's peak."""
    if words.spellings.height == 0:  # no papers, or papers without a word
        return _EMPTY_INDEX
    paper_ids, spellings, expansions = words.paper_index["paper_id"], words.spellings, words.expansions
    acronyms = _acronym_codes(expansions, spellings["lemma"].unique().sort(), words.paper_index)
    tokens = _tokens(words.spelled, spellings, acronyms)
    if tokens.height == 0:  # nothing but stop words and punctuation
        return _EMPTY_INDEX
    before_counting()
    counts, texts = _ngram_counts(tokens, acronyms.lemmas, max_words)
    del tokens  # 12 bytes per word of the corpus: gone before the counts become frames
    parts, vocabulary = _number_ngrams(counts, texts)
    parts, spellings = _merge_spellings(parts, vocabulary, _stock_terms(vocabulary))
    n_papers = len(paper_ids)
    terms = (
        _term_sums(parts, vocabulary.height)
        .select("term_idx", doc_freq=pl.col("papers").cast(pl.Int32), head_share=pl.col("heads") / pl.col("uses"))
        .join(vocabulary, on="term_idx")
        .with_columns(
            n_words=pl.col("term").str.count_matches(" ").cast(pl.Int32) + 1,
            idf=((1 + n_papers) / (1 + pl.col("doc_freq"))).log() + 1,
        )
    )
    terms = terms.with_columns(
        kind=pl.when(pl.col("term").str.contains(r"[ -]"))
        .then(pl.lit("phrase"))
        .when(pl.col("term").is_in(words.capitalised.implode()))
        .then(pl.lit("acronym"))
        .otherwise(pl.lit("word"))
    )
    paper_terms, weights = _weigh(parts, terms, vocabulary, paper_ids, max_terms)
    aliases = pl.concat([_acronym_aliases(expansions, terms), spellings.join(terms.select("term"), on="term")])
    return TermIndex(
        terms=terms.select(list(TERM_SCHEMA)).sort("term").cast(TERM_SCHEMA),
        paper_terms=paper_terms,
        aliases=aliases.unique(["alias", "term"]).sort("alias", "term").cast(ALIAS_SCHEMA),
        weights=weights,
    )


def _lemma_column(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Add ``lemma``: the singular of each distinct token, computed once per distinct token."""
    vocabulary = frame.select(pl.col(column).unique())
    lemmas = [singular(t) for t in vocabulary[column].to_list()]
    return frame.join(vocabulary.with_columns(lemma=pl.Series(lemmas, dtype=pl.String)), on=column, how="left")


def _position_in(values: pl.Expr, vocabulary: pl.Series) -> pl.Expr:
    """Each value's position in ``vocabulary`` (distinct values, every value among them): its code."""
    return values.replace_strict(vocabulary, pl.int_range(len(vocabulary), dtype=pl.UInt32))


def _spell(papers: pl.DataFrame) -> tuple[list[SpelledBatch], pl.DataFrame]:
    """Each batch of ``_PAPERS_PER_CHUNK`` papers' words and punctuation, in order, as the numbers
    of their spellings (``SpelledBatch``), and the spellings: ``spelling``, ``token``,
    ``lemma``, ``ends_chunk``, ``before_verb``, in number order.

    Papers are taken in ``paper_idx`` order, whatever the order of the rows: the counting and
    weighing that follow cut the corpus between papers, in that order. Words as strings are held a
    batch at a time: each batch is split once and its spellings are numbered in the order they
    first appear."""
    spelled, spelling_numbers, uses = [], FirstSeenNumbers(pl.String), []
    for start in range(0, papers.height, _PAPERS_PER_CHUNK):  # a dense rank: paper_idx < height
        batch = papers.filter(pl.col("paper_idx").is_between(start, start + _PAPERS_PER_CHUNK - 1)).sort("paper_idx")
        pieces = _pieces(batch).collect()
        if start < _VERB_SAMPLE_PAPERS:
            uses.append(verb_uses(pieces.filter(pl.col("paper_idx") < _VERB_SAMPLE_PAPERS)))
        # Counted by a group-by, whose result owns its rows: a run-length encoding's kept the batch's
        # paper numbers, one per word, alive (10^6 papers: 0.94 GB).
        runs = pieces.group_by("paper_idx", maintain_order=True).agg(pieces=pl.len())
        spelled.append(SpelledBatch(spelling_numbers.number(pieces["token"]), runs))
    verbs = verb_lemmas(pl.concat([_NO_VERB_USES, *uses]))
    # Words are classified and singularised once per distinct spelling, then looked up by number.
    numbered = spelling_numbers.values.rename("token").to_frame().with_row_index("spelling")
    spellings = _lemma_column(numbered, "token").sort("spelling").with_columns(
        ends_chunk=~pl.col("token").str.contains(r"^\p{L}")
        | pl.col("token").is_in(STOPWORDS)
        | (pl.col("token").str.len_chars() < 2)
        | (pl.col("token").str.contains(_ADVERB) & ~pl.col("token").is_in(_NOUNS_IN_LY))
        | (pl.col("lemma").is_in(verbs.implode()) & ~pl.col("token").str.ends_with("ing")),
        before_verb=pl.col("token").is_in(_BEFORE_VERB),
    )
    return spelled, spellings


def verb_uses(pieces: pl.DataFrame) -> pl.DataFrame:
    """``token``, ``uses``, ``verb_uses``: how often each word of ``pieces`` (``paper_idx``, ``token``:
    words and punctuation, in order) is used, and used as a verb (``_VERB_AFTER``, ``_VERB_BEFORE``)."""
    same_paper = pl.col("paper_idx").shift(1) == pl.col("paper_idx")
    next_same_paper = pl.col("paper_idx").shift(-1) == pl.col("paper_idx")
    return (
        pieces.lazy()
        .with_columns(
            verb_use=(same_paper & pl.col("token").shift(1).is_in(_VERB_AFTER)).fill_null(False)
            | (next_same_paper & pl.col("token").shift(-1).is_in(_VERB_BEFORE)).fill_null(False)
        )
        .filter(pl.col("token").str.contains(r"^\p{L}") & ~pl.col("token").is_in(STOPWORDS))
        .group_by("token")
        .agg(uses=pl.len().cast(pl.Int64), verb_uses=pl.col("verb_use").sum().cast(pl.Int64))
        .collect()
    )


def verb_lemmas(uses: pl.DataFrame) -> pl.Series:
    """The lemmas used as verbs in most of their uses (``verb_uses``' counts, summed), among those
    used at least ``_VERB_MIN_USES`` times."""
    by_token = uses.group_by("token").agg(pl.col("uses").sum(), pl.col("verb_uses").sum())
    return (
        _lemma_column(by_token, "token")
        .group_by("lemma")
        .agg(pl.col("uses").sum(), pl.col("verb_uses").sum())
        .filter((pl.col("uses") >= _VERB_MIN_USES) & (2 * pl.col("verb_uses") > pl.col("uses")))["lemma"]
        .sort()
    )


def _tokens(spelled: list[SpelledBatch], spellings: pl.DataFrame, acronyms: _AcronymCodes) -> pl.DataFrame:
    """One row per word of every paper, in order, acronyms expanded: ``paper_idx``, ``code`` (its
    lemma's position in ``acronyms.lemmas``) and ``starts_chunk``: whether the word starts a
    stop-word-free run, as a paper's first word always does.

    ``spelled`` is emptied as its batches are coded: it is 4 bytes per word, the result 9."""
    spellings = spellings.with_columns(code=_position_in(pl.col("lemma"), acronyms.lemmas))
    flag = lambda name: pl.lit(spellings[name]).gather(pl.col("spelling"))  # noqa: E731
    coded = []
    while spelled:
        tokens = (
            _spelled_words(spelled.pop(0)).lazy()
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
        coded.append(_expand_acronyms(tokens, acronyms))
    # One chunk per column: the counting then reads them as arrays without a copy (1.1 GB at 10^6 papers).
    return pl.concat(coded, rechunk=True)


def _spelled_words(batch: SpelledBatch) -> pl.DataFrame:
    """``paper_idx`` and ``spelling`` of each word of a batch, in order."""
    paper_idx = np.repeat(batch.runs["paper_idx"].to_numpy(), batch.runs["pieces"].to_numpy())
    return pl.DataFrame({"paper_idx": paper_idx, "spelling": batch.spelling})


def _pieces(papers: pl.DataFrame) -> pl.LazyFrame:
    """``paper_idx`` and ``token``: each word and punctuation mark of the papers, in order.

    The texts are normalised here, a batch at a time, rather than read normalised from the
    warehouse: both texts of 10^6 papers read at once, 3.1 GB, made the corpus step's peak."""
    return (
        papers.lazy()
        .select(
            "paper_idx",
            # One pass: a parenthesis holding one token, a punctuation mark, or a word.
            token=normalized_text(pl.col("text")).str.extract_all(
                f"{_SINGLE_TOKEN_PARENTHESIS}|[.,;:!?()\\[\\]\"'/|]|{_TOKEN}"
            ),
        )
        .explode("token")
        .drop_nulls("token")
    )


def _normalise_phrase(phrase: pl.Expr) -> pl.Expr:
    """A long form as the tokeniser would see it: lower case, one space between words."""
    return phrase.str.normalize("NFKC").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()


def _acronym_definitions(papers: pl.DataFrame) -> pl.DataFrame:
    """``paper_id``, ``alias`` (as written), ``key`` (its token), ``lemmas`` (the long form's words)."""
    # A batch at a time: the texts that may define an acronym are most texts, and filtering copies them.
    rows = [
        (paper_id, definition.short_form, definition.long_form)
        for batch in slices(papers, _PAPERS_PER_CHUNK)
        for paper_id, text in batch
        .filter(pl.col("text").str.contains(POSSIBLE_DEFINITION))
        .select("paper_id", "text")
        .iter_rows()
        for definition in find_definitions(text)
    ]
    frame = pl.DataFrame(rows, schema={"paper_id": pl.String, "alias": pl.String, "long_form": pl.String}, orient="row")
    frame = frame.with_columns(
        key=pl.col("alias").str.to_lowercase(),
        words=_normalise_phrase(pl.col("long_form")).str.extract_all(_TOKEN),
    )
    # Long forms that hold a function word ("mixture of experts") are split by the chunker; they stay
    # apart. Boilerplate words go, as the chunker drops them: "large language model" -> "language model".
    frame = frame.with_columns(pl.col("words").list.eval(pl.element().filter(~pl.element().is_in(STOPWORDS - FUNCTION_WORDS))))
    frame = frame.filter(
        pl.col("words").list.len().is_between(1, 4)
        & ~pl.col("words").list.eval(pl.element().is_in(FUNCTION_WORDS)).list.any()
        & pl.col("key").str.contains(f"^{_TOKEN}$")
    )
    lemmas = _lemma_column(frame.select("paper_id", "key", "words").with_row_index("definition").explode("words"), "words")
    lemmas = lemmas.sort("definition", maintain_order=True).group_by("definition", maintain_order=True).agg(
        "paper_id", "key", lemmas=pl.col("lemma")
    ).with_columns(pl.col("paper_id").list.first(), pl.col("key").list.first())
    return (
        frame.with_row_index("definition")
        .join(lemmas.select("definition", "lemmas"), on="definition")
        .select("paper_id", "alias", "key", "lemmas")
        .unique(["paper_id", "key"], keep="first", maintain_order=True)
    )


def _expansions(definitions: pl.DataFrame, papers: pl.DataFrame) -> pl.DataFrame:
    """Which token to expand, in which paper, into which words.

    A paper's own definition wins. Elsewhere the corpus' majority long form applies, when it
    holds a majority. A key that is also written as an ordinary lower-case word ("rise" for
    RISE) is never expanded where it appears so: only capitals mark an acronym.
    """
    lowercase_uses = _lowercase_uses(papers, definitions["key"].unique())
    own = definitions.join(lowercase_uses, on=["paper_id", "key"], how="anti")
    votes = definitions.group_by("key", "lemmas").agg(papers=pl.len(), alias=pl.col("alias").mode().sort().first())
    majority = (
        votes.with_columns(share=pl.col("papers") / pl.col("papers").sum().over("key"))
        .sort(["key", "papers", "lemmas"], descending=[False, True, False])
        .group_by("key", maintain_order=True)
        .first()
        .filter(pl.col("share") > 0.5)
        .join(lowercase_uses.select("key").unique(), on="key", how="anti")
    )
    return pl.concat(
        [own.select("key", "lemmas", "alias", paper_id="paper_id", defined=pl.lit(True)),
         majority.select("key", "lemmas", "alias", paper_id=pl.lit(None, pl.String), defined=pl.lit(False))]
    )


def _lowercase_uses(papers: pl.DataFrame, keys: pl.Series) -> pl.DataFrame:
    """``paper_id``, ``key``: the papers that write a key as a whole lower-case word ("rise")."""
    # Only a key of lower-case letters and digits can be written so.
    written = keys.filter(keys.str.contains(r"^\p{Ll}[\p{Ll}\p{N}]*$")).sort().to_list()
    patterns = [
        r"\b(?:" + "|".join(re.escape(key) for key in written[start: start + _KEYS_PER_PATTERN]) + r")\b"
        for start in range(0, len(written), _KEYS_PER_PATTERN)
    ]
    return pl.concat(
        [pl.DataFrame(schema={"paper_id": pl.String, "key": pl.String}).lazy()]
        + [papers.lazy().select("paper_id", key=pl.col("text").str.extract_all(pattern)).explode("key")
           for pattern in patterns]
    ).drop_nulls("key").unique().collect()


@dataclass(frozen=True)
class _AcronymCodes:
    """The acronym expansions in lemma codes: which token is replaced, in which paper, by which words."""

    lemmas: pl.Series  # the words' lemmas, then the words that only long forms bring: what a code indexes
    is_key: np.ndarray  # by code: whether some expansion replaces the word
    own: pl.DataFrame  # ``paper_idx``, ``code``: each paper's own definitions
    borrowed: pl.DataFrame  # ``code``: the corpus' majority long forms
    words: pl.Series  # the codes of each long form's words: own's rows, then borrowed's


def _acronym_codes(expansions: pl.DataFrame, lemmas: pl.Series, paper_index: pl.DataFrame) -> _AcronymCodes:
    """``_expansions`` in codes. Long forms may bring words the text never uses alone: they join the
    lemmas after the others, whose codes stay as they were."""
    lemmas = pl.concat([lemmas, expansions["lemmas"].explode().unique().sort()]).unique(maintain_order=True)
    expansions = (
        expansions.filter(pl.col("key").is_in(lemmas.implode()))
        .with_row_index("expansion")
        .explode("lemmas")
        .with_columns(code=_position_in(pl.col("key"), lemmas), word=_position_in(pl.col("lemmas"), lemmas))
        .group_by("expansion", maintain_order=True)
        .agg(pl.col("paper_id", "defined", "code").first(), codes="word")
    )
    own = expansions.filter("defined").join(paper_index, on="paper_id")
    borrowed = expansions.filter(~pl.col("defined"))
    is_key = np.zeros(len(lemmas), dtype=bool)
    is_key[expansions["code"].to_numpy()] = True
    return _AcronymCodes(lemmas, is_key, own.select("paper_idx", "code"), borrowed.select("code"),
                         pl.concat([own["codes"], borrowed["codes"]]))


def _expand_acronyms(tokens: pl.DataFrame, acronyms: _AcronymCodes) -> pl.DataFrame:
    """Replace each acronym token by its long form's words, in place, inside the same chunk: a
    paper's own definition first, else the corpus' majority. Only tokens that are some acronym are
    looked up."""
    rows = np.flatnonzero(acronyms.is_key[tokens["code"].to_numpy()])
    chosen = (
        tokens[rows].select("paper_idx", "code").with_columns(row=rows)
        .join(acronyms.own.with_row_index("own"), on=["paper_idx", "code"], how="left")
        .join(acronyms.borrowed.with_row_index("borrowed"), on="code", how="left")
        .select("row", expansion=pl.coalesce("own", pl.col("borrowed") + acronyms.own.height))
        .drop_nulls()
        .sort("row")
    )
    if chosen.height == 0:
        return tokens
    return _replace_by_words(tokens, chosen["row"].to_numpy(), chosen["expansion"].to_numpy(), acronyms.words)


def _replace_by_words(tokens: pl.DataFrame, rows: np.ndarray, expansion: np.ndarray, words: pl.Series) -> pl.DataFrame:
    """The tokens with each of ``rows`` (ascending) replaced, in place and in its chunk, by the codes
    of its ``expansion``, a row of ``words``. On arrays: a list per token would outweigh the tokens."""
    lengths = words.list.len().to_numpy().astype(np.int64)
    offsets = np.cumsum(lengths) - lengths
    flat = words.explode().to_numpy()
    counts = np.ones(tokens.height, dtype=np.int64)
    counts[rows] = lengths[expansion]
    code = np.repeat(tokens["code"].to_numpy(), counts)
    n_words = counts[rows]
    within = np.arange(n_words.sum()) - np.repeat(np.cumsum(n_words) - n_words, n_words)
    first = np.cumsum(counts) - counts  # each token's first row in the output
    replaced = np.repeat(first[rows], n_words) + within
    code[replaced] = flat[np.repeat(offsets[expansion], n_words) + within]
    starts_chunk = np.repeat(tokens["starts_chunk"].to_numpy(), counts)
    starts_chunk[replaced[within > 0]] = False  # a long form's later words continue the acronym's chunk
    return pl.DataFrame({"paper_idx": np.repeat(tokens["paper_idx"].to_numpy(), counts), "code": code,
                         "starts_chunk": starts_chunk})


def _ngram_counts(tokens: pl.DataFrame, lemmas: pl.Series, max_words: int) -> tuple[list[_Counts], list[pl.Series]]:
    """Every run of 1..max_words words inside one chunk, counted per paper.

    Returns the counts, one part per ``_TOKENS_PER_PART`` words of the corpus (cut between papers,
    so each part's keys follow the last's), and, per length, the text of each number. An n-gram
    is numbered by the pair (its first n-1 words' number, its last word), in the order pairs are
    first seen, so each occurrence is one integer and each distinct n-gram's text is built once.
    Its id (``_ngram_id``) is its length and that number.

    ``heads`` counts the occurrences that end their chunk. English noun phrases end in their
    head noun, so a candidate that rarely ends a chunk is a modifier ("erroneous") or a cut
    phrase ("rotor-invariant shift" of "rotor-invariant shift estimation").
    """
    if max_words > 1 << (32 - _NUMBER_BITS):
        raise ValueError(f"n-grams of up to {1 << (32 - _NUMBER_BITS)} words are counted, not {max_words}")
    # 32-bit arrays, widened only for the arithmetic: each is one word per word of the corpus.
    paper_idx = tokens["paper_idx"].to_numpy()
    code = tokens["code"].to_numpy()
    starts_chunk = tokens["starts_chunk"].to_numpy()
    # A count is at most its paper's words: 16 bits hold any abstract's (ingest caps a record at
    # 20,000 characters), a quarter of each (paper, n-gram) row at 10^6 papers.
    count_type = np.uint16 if len(code) == 0 or np.bincount(paper_idx).max() < 2**16 else np.uint32
    numberings = [FirstSeenNumbers(pl.Int64) for _ in range(2, max_words + 1)]
    # A cut every _TOKENS_PER_PART words, moved back to the first word of that word's paper.
    cuts = np.unique(np.r_[np.searchsorted(paper_idx, paper_idx[::_TOKENS_PER_PART]), len(code)])
    # A part is numbered here while the one before it is counted on a second thread (the numbering's
    # Polars joins and the counting's NumPy leave the interpreter free): two parts' n-grams are held.
    counted = []
    with ThreadPoolExecutor(max_workers=1) as counter:
        for start, end in zip(cuts[:-1], cuts[1:]):
            starts, ids, heads = _number_part(code[start:end], starts_chunk[start:end], len(lemmas), numberings)
            if counted:
                counted[-1].result()
            counted.append(counter.submit(_count_part, paper_idx[start:end][starts], ids, heads, count_type))
            del starts, ids, heads
        parts = [part.result() for part in counted]
    texts = [lemmas]
    for numbering in numberings:
        pairs = numbering.values
        texts.append(texts[-1].gather(pairs // len(lemmas)) + " " + lemmas.gather(pairs % len(lemmas)))
    return parts, texts


def _number_part(code: np.ndarray, starts_chunk: np.ndarray, n_lemmas: int,
                 numberings: list[FirstSeenNumbers]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The n-grams of one part's words (whole papers), every length one after another: the word
    each starts at, its id, and whether it ends its chunk. ``numberings`` number the pairs of
    lengths 2 and up, across parts."""
    n_tokens = len(code)
    starts = np.arange(n_tokens, dtype=np.int32)  # the words an n-gram starts at
    number = code  # the number of the n-gram at each start; here n = 1
    all_starts, all_ids, all_heads = [], [], []
    for n in range(1, len(numberings) + 2):
        if n > 1:
            # An n-gram is an (n-1)-gram whose next word continues its chunk.
            last = starts + n - 1
            longer = last < n_tokens
            longer[longer] = ~starts_chunk[last[longer]]
            starts = starts[longer]
            pair = number[longer].astype(np.int64) * n_lemmas + code[starts + n - 1]
            number = numberings[n - 2].number(pl.Series(pair, dtype=pl.Int64)).to_numpy()
        ends = starts + n
        all_starts.append(starts)
        all_ids.append(_ngram_id(n, number))
        # The part ends where a paper does: an n-gram that reaches its end ends its chunk.
        all_heads.append((ends >= n_tokens) | starts_chunk[np.minimum(ends, n_tokens - 1)])
    return np.concatenate(all_starts), np.concatenate(all_ids), np.concatenate(all_heads)


def _ngram_id(n: int, number: np.ndarray) -> np.ndarray:
    """An n-gram's id, 32 bits: its length less one above ``_NUMBER_BITS`` bits of its number."""
    if len(number) and number.max() >= 1 << _NUMBER_BITS:
        raise ValueError(f"more than 2^{_NUMBER_BITS} distinct n-grams of {n} words")
    return (np.uint64(n - 1) << np.uint64(_NUMBER_BITS)) | number.astype(np.uint64)


def _number_ngrams(counts: list[_Counts], texts: list[pl.Series]) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """Each part of ``_ngram_counts`` as a frame (``paper_idx``, ``term_idx``, ``count``, ``heads``;
    in paper order), and the ``vocabulary`` (``term_idx``, ``term``) they index, numbered in the
    terms' sort order so ties break alphabetically on integers.

    ``counts`` is emptied as each part becomes a frame, so the counts are held once."""
    # An id's position in the texts of every length, one after another.
    first_positions = np.cumsum([0] + [len(length) for length in texts[:-1]]).astype(np.uint64)

    def positions(keys: np.ndarray) -> np.ndarray:
        ids = keys & np.uint64(0xFFFFFFFF)
        return first_positions[ids >> np.uint64(_NUMBER_BITS)] + (ids & np.uint64((1 << _NUMBER_BITS) - 1))

    all_texts = pl.concat(texts)
    occurs = np.zeros(len(all_texts), dtype=bool)
    for keys, _, _ in counts:
        occurs[positions(keys)] = True
    present = np.flatnonzero(occurs)
    terms = all_texts.gather(present)
    order = terms.arg_sort().to_numpy()
    term_idx = np.empty(len(all_texts), dtype=np.uint32)
    term_idx[present[order]] = np.arange(len(present), dtype=np.uint32)
    frames = []
    while counts:
        keys, count, heads = counts.pop(0)
        frames.append(pl.DataFrame({
            "paper_idx": (keys >> np.uint64(32)).astype(np.uint32),
            "term_idx": term_idx[positions(keys)],
            "count": count,
            "heads": heads,
        }))
        del keys, count, heads
    return frames, pl.DataFrame({"term": terms.gather(order)}).with_row_index("term_idx")


def _count_part(papers: np.ndarray, ids: np.ndarray, heads: np.ndarray, count_type: type) -> _Counts:
    """One part's n-gram occurrences (their papers, ids and whether each ends its chunk) as sorted
    (paper, id) keys, each with its count and the occurrences that end their chunk."""
    # The head flag rides in the lowest bit, so one sort groups occurrences and counts heads.
    packed = pl.Series((papers.astype(np.uint64) << np.uint64(33)) | (ids << np.uint64(1)) | heads).sort().to_numpy()
    keys = packed >> np.uint64(1)
    firsts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    counts = np.diff(np.r_[firsts, len(packed)]).astype(count_type)
    head_counts = np.add.reduceat((packed & np.uint64(1)).astype(count_type), firsts, dtype=count_type)
    return keys[firsts], counts, head_counts


def variant_key(term: pl.Expr) -> pl.Expr:
    """What spelling variants share: no spaces or hyphens, American -ize and -or, single l."""
    return (
        term.str.replace_all(r"[ -]", "")
        .str.replace_all(r"is(e|ed|es|ing|ation|ations)\b", "iz$1")
        .str.replace_all(r"our\b", "or")
        .str.replace_all(r"ell(ing|ed)\b", "el$1")
    )


def _merge_spellings(parts: list[pl.DataFrame], vocabulary: pl.DataFrame,
                     stock: pl.Series) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """The parts of the (paper, term) counts, each still in paper order, with spelling variants
    merged into one term (the variant written most often, then the first in order) and then
    ``stock`` terms dropped; and the merged spellings as aliases.

    ``parts`` is emptied as its frames are filtered, so one part at a time is copied."""
    spellings = (
        _term_sums(parts, vocabulary.height)
        .join(vocabulary, on="term_idx")
        .with_columns(key=variant_key(pl.col("term")))
    )
    spellings = spellings.with_columns(
        preferred=pl.col("term_idx").sort_by(["uses", "term_idx"], descending=[True, False]).first().over("key")
    )
    variants = spellings.filter(pl.col("term_idx") != pl.col("preferred"))
    # Only rows of a variant or of its preferred spelling can meet; the rest pass through untouched.
    is_involved = pl.col("term_idx").is_in(pl.concat([variants["term_idx"], variants["preferred"]]).unique().implode())
    is_stock = pl.col("term_idx").is_in(stock.implode())
    untouched, involved = [], []
    while parts:
        grams = parts.pop(0)
        untouched.append(grams.filter(~is_involved & ~is_stock))
        involved.append(grams.filter(is_involved))
        del grams
    regrouped = (
        pl.concat(involved)
        .join(variants.select("term_idx", "preferred"), on="term_idx", how="left")
        .with_columns(term_idx=pl.coalesce("preferred", "term_idx"))
        .group_by("paper_idx", "term_idx")
        .agg(pl.col("count", "heads").sum())
        .filter(~is_stock)
        .sort("paper_idx")
    )
    merged = [*untouched, regrouped.cast(untouched[0].schema)]
    aliases = variants.join(vocabulary.rename({"term_idx": "preferred", "term": "preferred_term"}), on="preferred").select(
        alias="term", term="preferred_term", alias_kind=pl.lit("spelling"), papers=pl.col("papers").cast(pl.Int32)
    )
    return merged, aliases


def _term_sums(parts: list[pl.DataFrame], n_terms: int) -> pl.DataFrame:
    """``term_idx``, ``papers``, ``uses`` and ``heads`` of every term that occurs in ``parts``: summed
    part by part, as a group-by over the parts would first copy them into one frame."""
    papers, uses, heads = (np.zeros(n_terms, dtype=np.int64) for _ in range(3))
    for part in parts:
        term_idx = part["term_idx"].to_numpy()
        papers += np.bincount(term_idx, minlength=n_terms)
        uses += np.bincount(term_idx, weights=part["count"].to_numpy(), minlength=n_terms).astype(np.int64)
        heads += np.bincount(term_idx, weights=part["heads"].to_numpy(), minlength=n_terms).astype(np.int64)
    occurring = np.flatnonzero(papers)
    return pl.DataFrame({"term_idx": occurring.astype(np.uint32), "papers": papers[occurring],
                         "uses": uses[occurring], "heads": heads[occurring]})


def _stock_terms(vocabulary: pl.DataFrame) -> pl.Series:
    """The ``term_idx`` of stock phrases and of terms made only of generic words, decided once per term."""
    words = pl.col("term").str.split(" ")
    return vocabulary.filter(
        variant_key(pl.col("term")).is_in(STOCK_PHRASES)
        | words.list.eval(pl.element().is_in(GENERIC_WORDS)).list.all()
        | pl.col("term").str.contains(_ENDS_IN_PARTICIPLE)
    )["term_idx"]


def _capitalised_words(papers: pl.DataFrame) -> pl.Series:
    """Lower-cased words that are written in capitals (SAE, CoT), never as ordinary words."""
    written = papers.lazy().select(word=pl.col("text").str.extract_all(_CAPITALISED)).explode("word").drop_nulls()
    capitalised = written.select(pl.col("word").str.to_lowercase().str.replace(r"s$", "")).unique().collect()
    return capitalised["word"]


def _weigh(parts: list[pl.DataFrame], terms: pl.DataFrame, vocabulary: pl.DataFrame, paper_ids: pl.Series,
           max_terms: int) -> tuple[pl.DataFrame, TermWeights]:
    """TF-IDF, scaled by how often the term ends a noun phrase, halved inside a longer phrase:
    each paper's ``max_terms`` best, ranked, and every weight as a matrix.

    Every sum and rank is within one paper, so papers are weighed ``_PAPERS_PER_WEIGHING`` at a time:
    each part is in paper order, so a chunk's rows are a slice of each. A chunk's rows are (paper,
    term) pairs held as NumPy arrays in (paper, term) order: per-paper sums and ranks are then runs
    of a sorted array, with no hashing of 10^7 keys.

    The chunks' rows are written into columns sized for the most rows there can be (``ColumnBuffer``),
    so they are held once: at 10^6 papers, chunks kept apart and then joined held 1.8 GB twice.
    ``parts`` is emptied once every chunk is weighed: the counts (2.5 GB at 10^6 papers) are gone
    before the step's result is built."""
    terms = terms.with_columns(established=(1 + pl.col("doc_freq").cast(pl.Float64).log()) ** phrase_recurrence(terms))
    by_term = {
        column: _by_term(terms, column, vocabulary.height)
        for column in ("idf", "established", "head_share", "n_words", "doc_freq")
    }
    sub_phrases = _sub_phrases(terms, vocabulary)
    n_papers = len(paper_ids)
    chunk_starts = np.arange(0, n_papers + _PAPERS_PER_WEIGHING, _PAPERS_PER_WEIGHING, dtype=np.uint64)
    bounds = [np.searchsorted(part["paper_idx"].to_numpy(), chunk_starts.astype(np.uint32)) for part in parts]
    best = ColumnBuffer(n_papers * max_terms, _BEST_COLUMNS)
    linking = ColumnBuffer(n_papers * MAX_SHARED_TERMS_PER_PAPER, _LINKING_COLUMNS)

    def weigh_chunk(index: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        rows = pl.concat([part.slice(ends[index], ends[index + 1] - ends[index]) for part, ends in zip(parts, bounds)])
        pairs = (rows["paper_idx"].to_numpy().astype(np.uint64) << np.uint64(32)) | rows["term_idx"].to_numpy()
        in_order = stable_argsort(pairs)
        count = rows["count"].to_numpy()[in_order].astype(np.int32)
        return _weigh_papers(pairs[in_order], count, chunk_starts[index], by_term, sub_phrases, max_terms)

    # Chunks are weighed two at a time, on both cores: most of a chunk's work is single-threaded
    # NumPy, which leaves the interpreter free. Their rows are written in chunk order.
    with ThreadPoolExecutor(max_workers=2) as pool:
        for chosen, links in pool.map(weigh_chunk, range(len(chunk_starts) - 1)):
            best.append(chosen)
            linking.append(links)
    parts.clear()
    # The matrix's rows straight from the weighed rows, which come in paper order; the sort puts each
    # paper's terms in column order, as a matrix built from (row, column) pairs would have them.
    row_starts = np.r_[0, np.cumsum(np.bincount(linking["paper"], minlength=n_papers))]
    matrix = csr_matrix((linking["weight"], linking["term"], row_starts), shape=(n_papers, vocabulary.height))
    matrix.sort_indices()
    weights = TermWeights(matrix, paper_ids, vocabulary["term"].to_numpy())
    return pl.DataFrame(
        {
            "paper_id": paper_ids.gather(best["paper"]),
            "term": vocabulary["term"].gather(best["term"]),
            "occurrences": best["count"],
            "weight": best["weight"],
            "rank": best["rank"],
        }
    ).cast(PAPER_TERM_SCHEMA), weights


# The columns of a paper's best terms and of the weight matrix's entries, as the weighing fills them.
_BEST_COLUMNS = {"paper": np.uint32, "term": np.uint32, "count": np.int32, "weight": np.float64, "rank": np.int32}
_LINKING_COLUMNS = {"paper": np.uint32, "term": np.int32, "weight": np.float64}  # int32: a matrix's column index


def _weigh_papers(pairs: np.ndarray, count: np.ndarray, first_paper: np.uint64, by_term: dict[str, np.ndarray],
                  sub_phrases: list[np.ndarray], max_terms: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``_weigh`` for the sorted pairs of ``_PAPERS_PER_WEIGHING`` papers from ``first_paper``: the rows
    of their ``max_terms`` best terms, and the rows of the weight matrix."""
    paper, term = pairs >> np.uint64(32), (pairs & np.uint64(0xFFFFFFFF)).astype(np.int64)
    enclosing = _enclosing_counts(pairs, term, count, sub_phrases)
    tfidf = (
        (1 + np.log(count)) * by_term["idf"][term] * by_term["established"][term]
        * (_MODIFIER_FLOOR + (1 - _MODIFIER_FLOOR) * by_term["head_share"][term])
        * np.where(by_term["n_words"][term] > 1, _PHRASE_BONUS, 1.0)
        * np.where(enclosing >= count, _SUBSUMED_DISCOUNT, 1.0)
    )
    local = (paper - first_paper).astype(np.int64)  # papers numbered from 0 within the chunk
    norms = np.sqrt(np.bincount(local, weights=tfidf**2, minlength=_PAPERS_PER_WEIGHING))
    weight = np.round(tfidf / norms[local], 8)
    # Best first within each paper; the stable sort keeps equal weights in term (alphabetical) order.
    descending = (paper << np.uint64(27)) | (_WEIGHT_STEPS - np.round(weight * _WEIGHT_STEPS).astype(np.uint64))
    order = stable_argsort(descending)
    paper, local, term, count, weight = paper[order], local[order], term[order], count[order], weight[order]
    paper_starts = np.searchsorted(local, np.arange(_PAPERS_PER_WEIGHING))
    rank = np.arange(len(paper)) - paper_starts[local] + 1
    shared = by_term["doc_freq"][term] >= 2
    shared_seen = np.cumsum(shared)
    shared_rank = shared_seen - (shared_seen - shared)[paper_starts[local]]
    linking = shared & (shared_rank <= MAX_SHARED_TERMS_PER_PAPER)
    best = rank <= max_terms
    return (
        {"paper": paper[best], "term": term[best], "count": count[best], "weight": weight[best], "rank": rank[best]},
        {"paper": paper[linking], "term": term[linking], "weight": weight[linking]},
    )


def phrase_recurrence(terms: pl.DataFrame) -> float:
    """How much the corpus's papers share their phrases: of all (paper, phrase of two or more words)
    pairs, the share whose phrase some other paper uses too. 0 for an empty corpus.

    A term's weight is multiplied by ``(1 + ln doc_freq) ** phrase_recurrence``: a phrase that recurs
    across a list is one of its field's concepts, which is what authors name as their keywords,
    rather than a phrase cut out of one abstract ("gain superior quality"). How much recurrence
    says is read off the corpus itself: in one field's list phrases recur (two real conference
    lists: a third of the pairs), in a small or mixed collection they do not (the Inspec journal
    abstracts: a tenth), and there the weight stays close to plain TF-IDF."""
    phrases = terms.filter(pl.col("n_words") > 1)
    uses = phrases["doc_freq"].sum()
    return float(phrases.filter(pl.col("doc_freq") >= 2)["doc_freq"].sum() / uses) if uses else 0.0


def _by_term(terms: pl.DataFrame, column: str, n_terms: int) -> np.ndarray:
    """A column of ``terms`` as an array indexed by ``term_idx`` (zero for dropped terms)."""
    values = np.zeros(n_terms, dtype=terms[column].to_numpy().dtype)
    values[terms["term_idx"].to_numpy()] = terms[column].to_numpy()
    return values


def _sub_phrases(terms: pl.DataFrame, vocabulary: pl.DataFrame) -> list[np.ndarray]:
    """For a phrase that ends noun phrases, its two sub-phrases one word shorter (without its last
    word, without its first), as two arrays indexed by ``term_idx``: the sub-phrase's index, or -1."""
    by_text = vocabulary.rename({"term": "inner", "term_idx": "inner_idx"})
    parts = terms.filter((pl.col("head_share") >= 0.5) & (pl.col("n_words") >= 2)).select(
        "term_idx", first=pl.col("term").str.replace(r" [^ ]+$", ""), rest=pl.col("term").str.replace(r"^[^ ]+ ", "")
    )
    found_inner = []
    for column in ("first", "rest"):
        found = parts.join(by_text, left_on=column, right_on="inner")
        inner = np.full(vocabulary.height, -1, dtype=np.int64)
        inner[found["term_idx"].to_numpy()] = found["inner_idx"].to_numpy()
        found_inner.append(inner)
    return found_inner


def _enclosing_counts(pairs: np.ndarray, term: np.ndarray, count: np.ndarray, sub_phrases: list[np.ndarray]) -> np.ndarray:
    """For each (paper, term) pair, in sorted order, the most occurrences in the paper of a phrase one
    word longer that holds the term and ends noun phrases (0 when none)."""
    enclosing = np.zeros(len(pairs), dtype=count.dtype)
    paper_bits = pairs & ~np.uint64(0xFFFFFFFF)
    for inner in sub_phrases:
        rows = np.flatnonzero(inner[term] >= 0)
        wanted = paper_bits[rows] | inner[term[rows]].astype(np.uint64)
        targets = np.minimum(np.searchsorted(pairs, wanted), len(pairs) - 1)
        found = pairs[targets] == wanted  # the sub-phrase may have been dropped as a stock phrase
        np.maximum.at(enclosing, targets[found], count[rows[found]])
    return enclosing


def _acronym_aliases(expansions: pl.DataFrame, terms: pl.DataFrame) -> pl.DataFrame:
    """Each acronym and the term its long form became (in its most common spelling)."""
    defined = expansions.filter("defined").with_columns(long=pl.col("lemmas").list.join(" "))
    keyed = defined.with_columns(key=variant_key(pl.col("long")))
    spelled = terms.select("term", key=variant_key(pl.col("term")))
    return (
        keyed.join(spelled, on="key")
        .group_by("alias", "term")
        .agg(papers=pl.len().cast(pl.Int32))
        .select("alias", "term", alias_kind=pl.lit("acronym"), papers="papers")
    )

