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

Everything runs as Polars expressions over all papers at once; Python loops only touch the
distinct words (singulars) and the acronym definitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.sparse import csr_matrix

from paperhouse.acronyms import find_definitions

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
    additionally;specifically;finally;notably;importantly;respectively;e.g;i.e""".replace("\n", " ").split(";")
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
    remain remains make makes made often across yield yields reveal reveals find finds found""".split()
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
_BREAK = "|"
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
_KEEP_S = re.compile(r"(ss|us|is|ics|ous|ness|sis|xis|as|ys|'s)$")
# A capitalised short form as written (SAE, CoT, GPT-4): at least two capitals.
_CAPITALISED = r"\b[A-Za-z0-9]*[A-Z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*\b"
# Weighting beyond TF-IDF (see _weigh), chosen on the dev split of evaluation/keyphrase_gold.jsonl.
_SUBSUMED_DISCOUNT = 0.5
_MODIFIER_FLOOR = 0.4
_PHRASE_BONUS = 1.6


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
    """``paper_id``, ``text`` (as written) and ``normalized_text`` of each paper -> its ranked terms."""
    if papers.height == 0:
        return TermIndex(pl.DataFrame(schema=TERM_SCHEMA), pl.DataFrame(schema=PAPER_TERM_SCHEMA),
                         pl.DataFrame(schema=ALIAS_SCHEMA),
                         TermWeights(csr_matrix((0, 0)), pl.Series("paper_id", [], pl.String), np.array([], dtype=str)))
    definitions = _acronym_definitions(papers)
    tokens = _tokens(papers)
    expansions = _expansions(definitions, papers)
    tokens = _expand_acronyms(tokens, expansions)
    paper_ids = papers["paper_id"].unique().sort()
    grams, vocabulary = _ngrams(tokens, paper_ids, max_words)
    grams, spellings = _merge_spellings(grams, vocabulary)
    grams = _drop_stock(grams, vocabulary)
    n_papers = len(paper_ids)
    terms = (
        grams.group_by("term_idx")
        .agg(doc_freq=pl.len().cast(pl.Int32), head_share=pl.col("heads").sum() / pl.col("count").sum())
        .join(vocabulary, on="term_idx")
        .with_columns(
            n_words=pl.col("term").str.count_matches(" ").cast(pl.Int32) + 1,
            idf=((1 + n_papers) / (1 + pl.col("doc_freq"))).log() + 1,
        )
    )
    capitalised = _capitalised_words(papers)
    terms = terms.with_columns(
        kind=pl.when(pl.col("term").str.contains(r"[ -]"))
        .then(pl.lit("phrase"))
        .when(pl.col("term").is_in(capitalised.implode()))
        .then(pl.lit("acronym"))
        .otherwise(pl.lit("word"))
    )
    paper_terms, weights = _weigh(grams, terms, vocabulary, paper_ids, max_terms)
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


def _tokens(papers: pl.DataFrame) -> pl.DataFrame:
    """One row per word of every paper, in order, with the chunk (stop-word-free run) it belongs to."""
    tokens = (
        papers.lazy()
        .select(
            "paper_id",
            token=pl.col("normalized_text")
            .str.replace_all(_SINGLE_TOKEN_PARENTHESIS, f" {_BREAK} ")
            .str.replace_all(r"[.,;:!?()\[\]\"'/]+", f" {_BREAK} ")
            .str.extract_all(f"{_TOKEN}|\\{_BREAK}"),
        )
        .explode("token")
        .drop_nulls("token")
        .with_columns(
            is_break=(pl.col("token") == _BREAK)
            | pl.col("token").is_in(STOPWORDS)
            | (pl.col("token").str.len_chars() < 2)
            | (pl.col("token").str.contains(_ADVERB) & ~pl.col("token").is_in(_NOUNS_IN_LY))
            | pl.col("token").shift(1).is_in(_BEFORE_VERB).fill_null(False)
        )
        .with_columns(chunk=pl.col("is_break").cum_sum())
        .filter(~pl.col("is_break"))
        .select("paper_id", "token", "chunk")
        .collect()
    )
    return _lemma_column(tokens, "token").select("paper_id", "lemma", "chunk")


def _normalise_phrase(phrase: pl.Expr) -> pl.Expr:
    """A long form as the tokeniser would see it: lower case, one space between words."""
    return phrase.str.normalize("NFKC").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()


def _acronym_definitions(papers: pl.DataFrame) -> pl.DataFrame:
    """``paper_id``, ``alias`` (as written), ``key`` (its token), ``lemmas`` (the long form's words)."""
    rows = [
        (paper_id, definition.short_form, definition.long_form)
        for paper_id, text in papers.select("paper_id", "text").iter_rows()
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
    keys = definitions["key"].unique()
    lowercase_uses = (
        papers.lazy()
        .select("paper_id", key=pl.col("text").str.extract_all(r"\b\p{Ll}[\p{Ll}\p{N}]*\b"))
        .explode("key")
        .filter(pl.col("key").is_in(keys.implode()))
        .unique()
        .collect()
    )
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


def _expand_acronyms(tokens: pl.DataFrame, expansions: pl.DataFrame) -> pl.DataFrame:
    """Replace each acronym token by its long form's words, in place, inside the same chunk."""
    own = expansions.filter("defined").select("paper_id", lemma="key", own="lemmas")
    borrowed = expansions.filter(~pl.col("defined")).select(lemma="key", borrowed="lemmas")
    return (
        tokens.join(own, on=["paper_id", "lemma"], how="left", maintain_order="left")
        .join(borrowed, on="lemma", how="left", maintain_order="left")
        .with_columns(lemma=pl.coalesce("own", "borrowed", pl.concat_list("lemma")))
        .explode("lemma")
        .select("paper_id", "lemma", "chunk")
    )


def _ngrams(tokens: pl.DataFrame, paper_ids: pl.Series, max_words: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Every run of 1..max_words words inside one chunk, counted per paper.

    Returns ``grams`` (``paper_idx``, ``term_idx``, ``count``, ``heads``) and the ``vocabulary``
    (``term_idx``, ``term``) they index, numbered in the terms' sort order so ties break
    alphabetically on integers. Words are integer-coded while counting: strings are built once
    per distinct n-gram, not once per occurrence.

    ``heads`` counts the occurrences that end their chunk. English noun phrases end in their
    head noun, so a candidate that rarely ends a chunk is a modifier ("erroneous") or a cut
    phrase ("rotor-invariant shift" of "rotor-invariant shift estimation").
    """
    lemmas = tokens.select(pl.col("lemma").unique().sort()).with_row_index("code")
    papers = pl.DataFrame({"paper_id": paper_ids}).with_row_index("paper_idx")
    coded = (
        tokens.join(lemmas, on="lemma", maintain_order="left")
        .join(papers, on="paper_id", maintain_order="left")
        .select("paper_idx", "code", "chunk")
    )
    word_columns = [f"w{i}" for i in range(max_words)]
    grams = []
    for n in range(1, max_words + 1):
        last = n - 1

        def same_run(offset: int) -> pl.Expr:
            return (pl.col("chunk").shift(-offset) == pl.col("chunk")) & (
                pl.col("paper_idx").shift(-offset) == pl.col("paper_idx")
            )

        grams.append(
            coded.lazy()
            .select(
                "paper_idx",
                *(pl.col("code").shift(-i).alias(f"w{i}") if i < n else pl.lit(None, pl.UInt32).alias(f"w{i}")
                  for i in range(max_words)),
                keep=same_run(last),
                head=~same_run(n).fill_null(False),
            )
            .filter(pl.col("keep"))
            .drop("keep")
        )
    counted = (
        pl.concat(grams)
        .group_by("paper_idx", *word_columns)
        .agg(count=pl.len().cast(pl.Int32), heads=pl.col("head").sum().cast(pl.Int32))
        .collect()
    )
    spelled = lemmas.select(code="code", lemma="lemma")
    distinct = counted.select(word_columns).unique()
    for column in word_columns:
        distinct = distinct.join(spelled.rename({"code": column, "lemma": f"{column}_text"}), on=column, how="left")
    distinct = distinct.with_columns(
        term=pl.concat_str([f"{c}_text" for c in word_columns], separator=" ", ignore_nulls=True)
    ).sort("term").with_row_index("term_idx")
    grams = counted.join(distinct.select("term_idx", *word_columns), on=word_columns, nulls_equal=True).select(
        "paper_idx", "term_idx", "count", "heads"
    )
    return grams, distinct.select("term_idx", "term")


def variant_key(term: pl.Expr) -> pl.Expr:
    """What spelling variants share: no spaces or hyphens, American -ize and -or, single l."""
    return (
        term.str.replace_all(r"[ -]", "")
        .str.replace_all(r"is(e|ed|es|ing|ation|ations)\b", "iz$1")
        .str.replace_all(r"our\b", "or")
        .str.replace_all(r"ell(ing|ed)\b", "el$1")
    )


def _merge_spellings(grams: pl.DataFrame, vocabulary: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Spelling variants become one term: the variant written most often (then the first in order)."""
    spellings = (
        grams.group_by("term_idx")
        .agg(uses=pl.col("count").sum(), papers=pl.len())
        .join(vocabulary, on="term_idx")
        .with_columns(key=variant_key(pl.col("term")))
    )
    spellings = spellings.with_columns(
        preferred=pl.col("term_idx").sort_by(["uses", "term_idx"], descending=[True, False]).first().over("key")
    )
    variants = spellings.filter(pl.col("term_idx") != pl.col("preferred"))
    # Only rows of a variant or of its preferred spelling can meet; the rest pass through untouched.
    involved = pl.concat([variants["term_idx"], variants["preferred"]]).unique().implode()
    regrouped = (
        grams.filter(pl.col("term_idx").is_in(involved))
        .join(variants.select("term_idx", "preferred"), on="term_idx", how="left")
        .with_columns(term_idx=pl.coalesce("preferred", "term_idx"))
        .group_by("paper_idx", "term_idx")
        .agg(pl.col("count", "heads").sum())
    )
    merged = pl.concat([grams.filter(~pl.col("term_idx").is_in(involved)), regrouped], how="vertical_relaxed")
    aliases = variants.join(vocabulary.rename({"term_idx": "preferred", "term": "preferred_term"}), on="preferred").select(
        alias="term", term="preferred_term", alias_kind=pl.lit("spelling"), papers=pl.col("papers").cast(pl.Int32)
    )
    return merged, aliases


def _drop_stock(grams: pl.DataFrame, vocabulary: pl.DataFrame) -> pl.DataFrame:
    """Drop stock phrases and terms made only of generic words, deciding once per distinct term."""
    words = pl.col("term").str.split(" ")
    stock = vocabulary.filter(
        variant_key(pl.col("term")).is_in(STOCK_PHRASES) | words.list.eval(pl.element().is_in(GENERIC_WORDS)).list.all()
    )
    return grams.join(stock.select("term_idx"), on="term_idx", how="anti")


def _capitalised_words(papers: pl.DataFrame) -> pl.Series:
    """Lower-cased words that are written in capitals (SAE, CoT), never as ordinary words."""
    written = papers.lazy().select(word=pl.col("text").str.extract_all(_CAPITALISED)).explode("word").drop_nulls()
    capitalised = written.select(pl.col("word").str.to_lowercase().str.replace(r"s$", "")).unique().collect()
    return capitalised["word"]


def _weigh(grams: pl.DataFrame, terms: pl.DataFrame, vocabulary: pl.DataFrame, paper_ids: pl.Series,
           max_terms: int) -> tuple[pl.DataFrame, TermWeights]:
    """TF-IDF, scaled by how often the term ends a noun phrase, halved inside a longer phrase:
    each paper's ``max_terms`` best, ranked, and every weight as a matrix."""
    # A phrase's two sub-phrases one word shorter, for phrases that end noun phrases.
    by_text = vocabulary.rename({"term": "inner", "term_idx": "inner_idx"})
    parts = terms.filter((pl.col("head_share") >= 0.5) & (pl.col("n_words") >= 2)).select(
        "term_idx", first=pl.col("term").str.replace(r" [^ ]+$", ""), rest=pl.col("term").str.replace(r"^[^ ]+ ", "")
    )
    parts = pl.concat([parts.select("term_idx", inner="first"), parts.select("term_idx", inner="rest")]).join(
        by_text, on="inner"
    )
    # (paper, term) pairs as one integer: Polars groups and joins one key much faster than two.
    pair = lambda term: pl.col("paper_idx").cast(pl.UInt64) * (1 << 32) + pl.col(term)  # noqa: E731
    enclosing = (
        grams.join(parts.select("term_idx", "inner_idx"), on="term_idx")
        .group_by(pair=pair("inner_idx"))
        .agg(enclosing=pl.col("count").max())
    )
    scored = (
        grams.with_columns(pair=pair("term_idx"))
        .join(terms.select("term_idx", "idf", "head_share", "n_words", "doc_freq"), on="term_idx")
        .join(enclosing, on="pair", how="left")
        .with_columns(
            tfidf=(1 + pl.col("count").log()) * pl.col("idf")
            * (_MODIFIER_FLOOR + (1 - _MODIFIER_FLOOR) * pl.col("head_share"))
            * pl.when(pl.col("n_words") > 1).then(_PHRASE_BONUS).otherwise(1.0)
            * pl.when(pl.col("enclosing") >= pl.col("count")).then(_SUBSUMED_DISCOUNT).otherwise(1.0)
        )
        .with_columns(weight=(pl.col("tfidf") / pl.col("tfidf").pow(2).sum().over("paper_idx").sqrt()).round(8))
        # In (paper, term) order, an ordinal rank breaks equal weights by term, the alphabetical order.
        .sort("pair")
        .with_columns(rank=pl.col("weight").rank("ordinal", descending=True).over("paper_idx").cast(pl.Int32))
    )
    shared = scored.filter(pl.col("doc_freq") >= 2).filter(
        pl.col("weight").rank("ordinal", descending=True).over("paper_idx") <= MAX_SHARED_TERMS_PER_PAPER
    )
    weights = TermWeights(
        csr_matrix(
            (shared["weight"].to_numpy(), (shared["paper_idx"].to_numpy(), shared["term_idx"].to_numpy())),
            shape=(len(paper_ids), vocabulary.height),
        ),
        paper_ids,
        vocabulary["term"].to_numpy(),
    )
    scored = scored.filter(pl.col("rank") <= max_terms).sort("paper_idx", "rank")
    return pl.DataFrame(
        {
            "paper_id": paper_ids.gather(scored["paper_idx"]),
            "term": vocabulary["term"].gather(scored["term_idx"]),
            "occurrences": scored["count"],
            "weight": scored["weight"],
            "rank": scored["rank"],
        }
    ).cast(PAPER_TERM_SCHEMA), weights


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

