"""Reading a CSV or TSV that was written carelessly, row by row, so that one bad row costs that row only.

Scrapers write exports without always quoting: a title, a keyword list or an abstract with a comma
in it lands in the file unquoted (a row then has more fields than the header), a field holds a stray
double quote (``how to compile" human-readable programs``), a field opens with one
(``"Hey, that's not an ODE": ...``). A strict reader (Polars) gives up on the whole file at the
first such quote; ``paperhouse.ingest.table_reading`` reads clean files with Polars and hands any other
to ``read_rows`` here, which reads the text as a tolerant CSV reader would:

- a field is quoted only when it opens with a quote and the quote closes just before a separator or
  a line end (``""`` inside is one quote); otherwise its quotes are text, as a stray quote is;
- a quoted field may run across lines, but not into what looks like the next row, nor to the end
  of the file without closing: such a field opened with a stray quote, and is read as text to the
  end of its line, so it does not swallow the rows that follow;
- rows are numbered as the fast path numbers them: from 1, the header and blank rows not counted,
  a quoted field's line breaks inside its row;
- a row with more fields than the header is realigned where its fields can be anchored
  (``realign``): the separators a scraper left unquoted are found again, and the row gets the
  repair ``REALIGNED``; a row that cannot be realigned is rejected alone, with its reason.

Realignment chooses, of all the ways to give each column a run of the row's fields (in order,
joined again by the separator), the one that fits best: an id is one token without spaces, a link
one ``http(s)://`` token, a year ``19xx``/``20xx``, keywords short phrases, the title no
sentences, the abstract the prose; a quoted field is a whole field; and a separator inside text is
followed by a space (``, ``) while one between fields is not. When two ways fit almost as well and
give a different title, abstract, id or link, the row is rejected rather than guessed.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from dataclasses import dataclass

# The repair a realigned row is given (``_repair``), named as ``paperhouse.ingest.judging.REPAIRS`` are.
REALIGNED = "realigned_fields"
# Field kinds realignment knows (``paperhouse.ingest.table_reading.FIELDS``); any other column is text.
_SINGLE = ("external_id", "link", "year")
_PHRASES = ("keywords", "authors")
# A row with more fields than this is not realigned (rejected): no header is that far off.
_MAX_TOKENS = 400
# Ways kept per step of the search: enough to find the best one that reads the row differently.
_KEEP = 4
# A way that fits worse than this is no reading of the row; the best must beat any way that reads
# the title, abstract, id or link differently by at least the margin.
_FLOOR = -9.0
_MARGIN = 2.0
_IMPOSSIBLE = float("-inf")

_URL = re.compile(r"\s*https?://\S+\s*")
_HAS_URL = re.compile(r"https?://")
_YEAR = re.compile(r"\s*(?:19|20)\d\d(?:\.0)?\s*")
_ID = re.compile(r"\s*[^\s]{1,64}\s*")
# The end of a sentence: a word of two lower-case letters or more, then a full stop, ! or ?.
_SENTENCE_END = re.compile(r"[a-z]{2}[.!?](?:\s|$)|[a-z]{2}\.\s+[A-Z]")
_TITLE_SENTENCES = re.compile(r"[a-z]{2}\.\s+[A-Z]")
# Words a keyword or an author's name hardly ever holds, and prose is full of.
_PROSE_WORDS = frozenset(
    "we our us this these those that which is are was were be been being can could may might will would "
    "should has have had it its they their them there here however thus then while when where whereas "
    "show shows shown propose proposes proposed present presents such than not also".split()
)
_WORD = re.compile(r"[A-Za-z]+")
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|et al|etc)\b")
_LEAD_SPACE = re.compile(r"[\"']?\s(?!\s)")
# A row's first field, as most rows of a file write it: told apart from a line of prose.
_ROW_STARTS = (
    re.compile(r"\d{1,12}"),
    re.compile(r"(?=[A-Za-z0-9_-]*(?:\d|[a-z][A-Z]))[A-Za-z0-9_-]{2,40}"),  # ids such as OpenReview's
    re.compile(r"https?://\S+"),
)
_ROW_START_SHARE = 0.5


@dataclass(frozen=True)
class Token:
    """One field of a row as read: ``value`` its text (a quoted field unquoted, an empty unquoted
    field None), ``raw`` as written, ``quoted`` when it was a whole quoted field."""

    value: str | None
    raw: str
    quoted: bool = False


@dataclass(frozen=True)
class Rows:
    """What ``read_rows`` read: the header's names, then per row (numbered from 1 in this order) its
    fields, its problem and its repair."""

    columns: list[str]
    values: list[list[str | None]]  # one list per row, as long as ``columns``
    problems: list[str | None]
    repairs: list[str | None]


def read_rows(
    text: str, separator: str, kinds_of: Callable[[list[str]], list[str | None]] | None = None
) -> Rows | None:
    """The rows of ``text``; None when it holds no header. ``kinds_of`` is told the header's names
    before any row is read (it may raise), and names the field each column holds (``title``,
    ``link``, ...; None for others), for realignment."""
    reader = _Reader(text, separator)
    header = reader.next_record()
    while header is not None and _blank(header):
        header = reader.next_record()
    if header is None:
        return None
    columns = [token.value or "" for token in header]
    width = len(columns)
    kinds = kinds_of(columns) if kinds_of is not None else [None] * width
    values: list[list[str | None]] = []
    problems: list[str | None] = []
    repairs: list[str | None] = []
    while (record := reader.next_record()) is not None:
        if _blank(record):
            continue
        reader.firsts.append((record[0].value or "").strip('"'))
        tokens = _without_trailing_empties(record, width)
        problem = repair = None
        if len(tokens) <= width:
            row = [token.value for token in tokens] + [None] * (width - len(tokens))
        else:
            aligned = realign(tokens, kinds, separator)
            if aligned is None:
                row = _as_read(tokens, width, separator)
                problem = (
                    f"unparsable row: more fields than the header's {width} ({len(tokens)} fields that"
                    " cannot be realigned: a separator not quoted?)"
                )
            else:
                row, repair = aligned, REALIGNED
        values.append(row)
        problems.append(problem)
        repairs.append(repair)
    return Rows(columns, values, problems, repairs)


def _blank(record: list[Token]) -> bool:
    """A row of empty or white fields is no row, as a blank line in a text list is no paragraph."""
    return all(token.value is None or not token.value.strip() for token in record)


def _without_trailing_empties(record: list[Token], width: int) -> list[Token]:
    """A row less the empty fields past the header's width that end it (a separator at its end)."""
    end = len(record)
    while end > width and (record[end - 1].value is None or not record[end - 1].value.strip()):
        end -= 1
    return record[:end]


def _as_read(tokens: list[Token], width: int, separator: str) -> list[str | None]:
    """A row that cannot be realigned, as read: a field per column, the last column what is left
    (so its excerpt shows it)."""
    head = [token.value for token in tokens[: width - 1]]
    rest = tokens[width - 1 :]
    return [*head, rest[0].value if len(rest) == 1 else separator.join(token.raw for token in rest)]


class _Reader:
    """Records of a delimited text, one at a time, read tolerantly (see the module's docstring)."""

    def __init__(self, text: str, separator: str):
        self.text = text
        self.separator = separator
        self.pos = 0
        # The first field of each row read so far: the shape rows open with is learned from them
        # (counted when first needed, and from there on).
        self.firsts: list[str] = []
        self._counted = 0
        self._shape_counts = [0] * len(_ROW_STARTS)

    def next_record(self) -> list[Token] | None:
        text, sep = self.text, self.separator
        if self.pos >= len(text):
            return None
        line_end = _line_end(text, self.pos)
        line = text[self.pos : line_end]
        if '"' not in line:  # the common case: split at once
            self.pos = line_end + 1
            return [_literal(raw) for raw in _chomp(line).split(sep)]
        tokens: list[Token] = []
        pos = self.pos
        while True:
            token, pos, line_end = self._field(pos, line_end, tokens[0].value if tokens else None)
            tokens.append(token)
            if pos < len(text) and text[pos] == sep:
                pos += 1
                continue
            self.pos = line_end + 1
            return tokens

    def _field(self, pos: int, line_end: int, first: str | None) -> tuple[Token, int, int]:
        """The field at ``pos`` of the row whose first field is ``first`` (None when this is it),
        where it ends, and where its row's line ends."""
        text, sep = self.text, self.separator
        if pos < line_end and text[pos] == '"':
            close = _closing_quote(text, pos + 1)
            if close is not None:
                after = close + 1
                ends_line = after >= len(text) or text[after] == "\n" or text.startswith("\r\n", after)
                if (after < len(text) and text[after] == sep) or ends_line:
                    inner = text[pos + 1 : close]
                    spans_lines = close > line_end
                    if not spans_lines or self._whole_field(pos, close, first):
                        new_end = _line_end(text, close) if spans_lines else line_end
                        return Token(inner.replace('""', '"'), text[pos:after], True), after, new_end
        # Text up to the next separator on the line: an unquoted field, or one whose quote is text.
        end = text.find(sep, pos, line_end)
        end = line_end if end == -1 else end
        raw = text[pos:end]
        if end == line_end:
            raw = _chomp(raw)
        return _literal(raw), end, line_end

    def _whole_field(self, start: int, close: int, first: str | None) -> bool:
        """Whether a quoted field running from ``start`` across lines to ``close`` is one field: no
        line inside it opens as rows open (then its quote was a stray one)."""
        shape = self._row_shape(first)
        if shape is None:
            return True
        text = self.text
        line_start = text.find("\n", start) + 1
        while 0 < line_start <= close:
            opening = text[line_start : _line_end(text, line_start)].split(self.separator, 1)[0]
            if shape.fullmatch(_chomp(opening).strip('"')):
                return False
            line_start = text.find("\n", line_start) + 1
        return True

    def _row_shape(self, first: str | None) -> re.Pattern | None:
        """The shape rows open with (a number, an id, a link: shapes a line of prose seldom opens
        with): the one this row's first field has, and half the rows before it at least; None when
        there is none."""
        for value in self.firsts[self._counted :]:
            for i, shape in enumerate(_ROW_STARTS):
                self._shape_counts[i] += shape.fullmatch(value) is not None
        self._counted = seen = len(self.firsts)
        current = first.strip('"') if first is not None else None
        for shape, count in zip(_ROW_STARTS, self._shape_counts, strict=True):
            if current is not None and not shape.fullmatch(current):
                continue
            if (seen and count < _ROW_START_SHARE * seen) or (not seen and current is None):
                continue
            return shape
        return None


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end == -1 else end


def _chomp(raw: str) -> str:
    """A line's last field without the carriage return of a CRLF line end."""
    return raw[:-1] if raw.endswith("\r") else raw


def _literal(raw: str) -> Token:
    return Token(raw if raw else None, raw)


def _closing_quote(text: str, pos: int) -> int | None:
    """Where the quoted field whose text starts at ``pos`` closes: its first quote that is not one
    of a doubled pair. None when none does."""
    while True:
        quote = text.find('"', pos)
        if quote == -1:
            return None
        if text.startswith('"', quote + 1):
            pos = quote + 2
            continue
        return quote


# Realignment


class _Features:
    """Per token of a row, what realignment weighs, with running sums so that a run of tokens is
    weighed at once."""

    def __init__(self, tokens: list[Token], separator: str):
        self.tokens = tokens
        self.separator = separator
        n = len(tokens)
        raws = [token.raw for token in self.tokens]
        # Text goes on after a separator with a space (``, ``, or ``," `` after a closing quote).
        self.lead_space = [_LEAD_SPACE.match(raw) is not None for raw in raws]
        self.empty = [token.value is None or not token.value.strip() for token in self.tokens]
        self.quoted = [token.quoted for token in self.tokens]
        # A quoted field kept whole; one merged with the text after it only when that text goes on
        # after a space (a field that opened with a quoted phrase: "Learning to learn", a paradigm).
        self.quote_merge_bad = [self.quoted[i] and (i + 1 >= n or not self.lead_space[i + 1]) for i in range(n)]
        self.prefix_continuation = _running(
            [0.0 if self.lead_space[i] and not self.empty[i] else -1.5 for i in range(n)]
        )
        self.prefix_url = _running([1.0 if _HAS_URL.search(raw) else 0.0 for raw in raws])
        phrases = [_phrase_score(raw) for raw in raws]
        self.prefix_phrase = _running(phrases)
        # A list may be written ``a,b,c``: a phrase after a separator without a space goes on a list.
        self.prefix_list_continuation = _running(
            [0.0 if phrases[i] > 0 and not self.empty[i] else -1.5 if not self.lead_space[i] else 0.0 for i in range(n)]
        )
        self.prefix_title = _running([-2.0 if _TITLE_SENTENCES.search(raw) else 0.0 for raw in raws])
        self.prefix_chars = _running([float(len(raw) + 1) for raw in raws])
        self.prefix_quoted = _running([1.0 if quoted else 0.0 for quoted in self.quoted])
        self.prefix_quote_bad = _running([1.0 if bad else 0.0 for bad in self.quote_merge_bad])

    def text(self, i: int, j: int) -> str | None:
        if j - i == 1:
            return self.tokens[i].value
        return self.separator.join(token.raw for token in self.tokens[i:j])

    def score(self, kind: str | None, i: int, j: int) -> float:
        """How well tokens ``i`` to ``j`` (exclusive) fit as one field of this kind."""
        k = j - i
        token = self.tokens[i]
        score = -3.0 if self.lead_space[i] and not self.empty[i] else 0.0
        if k > 1:
            if self.prefix_quote_bad[j - 1] - self.prefix_quote_bad[i] > 0 or self.quoted[j - 1]:
                return _IMPOSSIBLE
            continuation = self.prefix_list_continuation if kind in _PHRASES else self.prefix_continuation
            score += continuation[j] - continuation[i + 1]
            score -= 3.0 * (self.prefix_quoted[j] - self.prefix_quoted[i])
        urls = self.prefix_url[j] - self.prefix_url[i]
        chars = self.prefix_chars[j] - self.prefix_chars[i]
        if kind in _SINGLE:
            if k > 1:
                return _IMPOSSIBLE
            value = token.value or ""
            if not value.strip():
                return score
            if kind == "link":
                return score + 3.0 if _URL.fullmatch(value) else score - 4.0
            if kind == "year":
                return score + 2.0 if _YEAR.fullmatch(value) else score - 4.0
            return score - 4.0 if urls or not _ID.fullmatch(value) else score
        if kind in _PHRASES:
            if urls:
                return _IMPOSSIBLE
            return score + self.prefix_phrase[j] - self.prefix_phrase[i]
        if kind == "title":
            if urls:
                return _IMPOSSIBLE
            return score + self.prefix_title[j] - self.prefix_title[i] - (4.0 if chars > 400 else 0.0)
        if kind == "abstract":
            first = (token.value or "").lstrip()
            if first[:1].islower():
                score -= 1.0
            return score - (2.0 if chars < 40 else 0.0)
        return score - 2.0 * (k - 1)


def _running(values: list[float]) -> list[float]:
    sums = [0.0]
    for value in values:
        sums.append(sums[-1] + value)
    return sums


def _phrase_score(raw: str) -> float:
    """How much a token reads as one keyword (or one author's name): short (keywords are one to four
    words, rarely more), no sentence, no prose words, no parenthesis left open."""
    text = raw.strip()
    if not text:
        return -1.0
    words = text.split()
    score = 0.5 if len(words) <= 4 else -1.0 if len(words) <= 6 else -3.0
    if _SENTENCE_END.search(text):
        score -= 1.5 if len(words) <= 4 else 4.0
    score -= 2.0 * sum(word.lower() in _PROSE_WORDS for word in _WORD.findall(text))
    if text.count("(") != text.count(")") or text.count("[") != text.count("]") or _ABBREVIATIONS.search(text):
        score -= 2.0
    if words[0].lower() in ("and", "or", "but"):
        score -= 3.0
    return score


def realign(tokens: list[Token], kinds: list[str | None], separator: str) -> list[str | None] | None:
    """The row's fields, one per column, when its tokens can be given to the columns one way that
    fits clearly best; None when not."""
    width = len(kinds)
    count = len(tokens)
    if count > _MAX_TOKENS or count < width:
        return None
    features = _Features(tokens, separator)
    # ways[g][i]: the best few ways to give columns g.. the tokens i..: (score, where column g ends,
    # which of the ways from there on).
    ways: list[dict[int, list[tuple[float, int, int]]]] = [{} for _ in range(width + 1)]
    ways[width][count] = [(0.0, count, 0)]
    for group in range(width - 1, -1, -1):
        kind = kinds[group]
        later = width - group - 1
        for start in range(group, count - later):
            found: list[tuple[float, int, int]] = []
            last = start + 1 if kind in _SINGLE else count - later
            for end in range(start + 1, last + 1):
                rest = ways[group + 1].get(end)
                if not rest:
                    continue
                score = features.score(kind, start, end)
                if score == _IMPOSSIBLE:
                    continue
                found.extend((score + rest_score, end, rank) for rank, (rest_score, _, _) in enumerate(rest))
            if found:
                ways[group][start] = heapq.nlargest(_KEEP, found)
    best = ways[0].get(0)
    # One column can only take the whole row: nothing to weigh it against.
    if not best or (best[0][0] < _FLOOR and width > 1):
        return None
    chosen = _fields(features, ways, 0)
    telling = [i for i, kind in enumerate(kinds) if kind in ("title", "abstract", "external_id", "link")] or list(
        range(width)
    )
    for rank in range(1, len(best)):
        if best[0][0] - best[rank][0] >= _MARGIN:
            break
        other = _fields(features, ways, rank)
        if any(other[i] != chosen[i] for i in telling):
            return None
    return chosen


def _fields(features: _Features, ways: list[dict[int, list[tuple[float, int, int]]]], rank: int) -> list[str | None]:
    """The fields of one of the best ways to read the row."""
    fields = []
    start = 0
    for group in range(len(ways) - 1):
        _, end, next_rank = ways[group][start][rank]
        fields.append(features.text(start, end))
        start, rank = end, next_rank
    return fields
