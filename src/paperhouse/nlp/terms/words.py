"""The words of abstracts as the terms see them: stop words, stock phrases and generic words, a
conservative singular, the key spelling variants share, and the words a corpus uses as verbs."""

from __future__ import annotations

import re

import polars as pl

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


# The names of markup, which no abstract uses as words: HTML entities' (``&gt;``, ``&amp;``,
# ``&rsquo;``, ``&eacute;``) and tags' that are no English word or common acronym (``<sub>``, ``<br>``,
# MathML's ``<mrow>``). Readers decode and strip markup (``paperhouse.ingest.normalize``); should any escape
# them, these words still end a phrase and are never a term. Names that are words too ("span",
# "table", "code", "title") or acronyms as well as tags ("EM", "TD", "LI") are no markup words.
MARKUP_WORDS = frozenset(
    """amp lt gt quot apos nbsp ndash mdash hellip rsquo lsquo rdquo ldquo sbquo bdquo laquo raquo lsaquo
    rsaquo thinsp ensp emsp zwnj zwj lrm rlm middot iexcl iquest brvbar curren macr ordf ordm szlig plusmn
    frac12 frac14 frac34 sup1 sup2 sup3 permil larr rarr harr uarr darr lrarr asymp infin notin isin sdot
    oline frasl lowast radic aelig oelig eth thorn
    sub sup br div nobr wbr tbody thead tfoot colgroup xref jats mml mi mo mn mrow msub msup msubsup mfrac
    msqrt mroot mstyle mtext mspace mover munder munderover mtable mtr mtd mfenced mpadded mphantom menclose
    merror maction mglyph mmultiscripts mprescripts""".split()
) | frozenset(
    letter + accent
    for letter in "aeiouycnos"
    for accent in ("acute", "grave", "circ", "uml", "tilde", "cedil", "ring", "slash")
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


_IRREGULAR_PLURALS = {
    "data": "data",
    "analyses": "analysis",
    "hypotheses": "hypothesis",
    "indices": "index",
    "matrices": "matrix",
    "vertices": "vertex",
    "criteria": "criterion",
    "phenomena": "phenomenon",
    "lens": "lens",
    "means": "means",
    "series": "series",
    "species": "species",
}


# Adverbs ("coherently", "empirically") end a phrase like stop words; these few nouns end in -ly too.
ADVERB = r"^\p{L}{3,}ly$"


NOUNS_IN_LY = ("anomaly", "family", "assembly", "monopoly", "supply", "italy", "butterfly", "reply", "july")


# The word after a subject or a modal is a verb ("we deactivate", "can restore"): it starts no phrase.
BEFORE_VERB = ("we", "they", "can", "could", "may", "might", "will", "would", "should", "must", "cannot")


# Verbs, read off the corpus: a word used as one in most of its uses, right after a subject, a modal
# or "to", or right before an article or an object ("address the", "we tackle"), breaks a phrase
# wherever it stands ("pick independent money manager" is "independent money manager"). Words in
# -ing stay: "learning a policy" is a verb, "reinforcement learning" a term.
_VERB_AFTER = (*BEFORE_VERB, "it", "which", "also", "to", "not")


_VERB_BEFORE = (
    "the",
    "a",
    "an",
    "our",
    "their",
    "its",
    "this",
    "these",
    "those",
    "such",
    "them",
    "it",
    "us",
    "both",
    "each",
    "how",
    "whether",
    "that",
)


_VERB_MIN_USES = 5


# A phrase ends in its head noun, never in a participle: "aliasing effect associated" is cut
# from "aliasing effects associated with ...". Nouns in -eed (speed, seed, need) are nouns.
ENDS_IN_PARTICIPLE = r" \p{L}+[^e]ed$"


_KEEP_S = re.compile(r"(ss|us|is|ics|ous|ness|sis|xis|as|ys|'s)$")


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


def lemma_column(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Add ``lemma``: the singular of each distinct token, computed once per distinct token."""
    vocabulary = frame.select(pl.col(column).unique())
    lemmas = [singular(t) for t in vocabulary[column].to_list()]
    return frame.join(vocabulary.with_columns(lemma=pl.Series(lemmas, dtype=pl.String)), on=column, how="left")


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
        lemma_column(by_token, "token")
        .group_by("lemma")
        .agg(pl.col("uses").sum(), pl.col("verb_uses").sum())
        .filter((pl.col("uses") >= _VERB_MIN_USES) & (2 * pl.col("verb_uses") > pl.col("uses")))["lemma"]
        .sort()
    )


def variant_key(term: pl.Expr) -> pl.Expr:
    """What spelling variants share: no spaces or hyphens, American -ize and -or, single l."""
    return (
        term.str.replace_all(r"[ -]", "")
        .str.replace_all(r"is(e|ed|es|ing|ation|ations)\b", "iz$1")
        .str.replace_all(r"our\b", "or")
        .str.replace_all(r"ell(ing|ed)\b", "el$1")
    )
