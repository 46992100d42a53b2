"""Decode abstract-list files whose encoding nobody wrote down.

Order of evidence: a byte-order mark; UTF-16 without a mark (NUL bytes on one side of
each code unit); strict UTF-8; UTF-8 with a few damaged bytes (many valid multi-byte
characters, few invalid sequences: the damage becomes U+FFFD and only the paragraphs that
hold it are rejected); GB18030 when its multi-byte characters look like real Chinese text;
Windows-1252 as the last single-byte guess. Anything else is rejected with a reason a person
understands, never guessed into mojibake.

A few stray control characters (NUL included) do not make a text file binary: they are kept,
and dropped from their paragraphs downstream (``paperhouse.ingest.reading``; only a paragraph that is
mostly control bytes is rejected), so one bad byte never costs the rest of the file.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

import numpy as np

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Control characters that never appear in prose; tab, newlines and form feed are fine. Counted in
# a text's UTF-8 bytes, where each is one byte that no other character's bytes hold: deleting them
# from the bytes takes a third of a regular expression's time over the text (16 MB: 23 ms, 77 ms).
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F])
_MAX_CONTROL_SHARE = 0.001
_VALID_PER_INVALID = 4


class UndecodableFile(ValueError):
    """The bytes are not text in any encoding paperhouse accepts; ``str(e)`` is the reason."""


@dataclass(frozen=True)
class DecodedText:
    text: str
    encoding: str


def decode(data: bytes) -> DecodedText:
    if not data:
        raise UndecodableFile("empty file")
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            if encoding == "utf-8-sig" and not _decodes(data, encoding):
                damaged = _damaged_utf8(data[len(bom) :])
                if damaged is not None:
                    return _checked(damaged, encoding, data)
            return _checked(_strict(data, encoding, "the byte-order mark says"), encoding, data)
    if b"\x00" in data:
        encoding = _utf16_without_bom(data)
        if encoding is not None:
            return _checked(_strict(data, encoding, "the NUL-byte pattern says"), encoding, data)
        if data.count(0) > _MAX_CONTROL_SHARE * len(data):
            raise UndecodableFile("binary file: contains NUL bytes and is not UTF-16 text")
    for encoding in ("utf-8", "gb18030", "cp1252"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            if encoding == "utf-8" and (damaged := _damaged_utf8(data)) is not None:
                return _checked(damaged, encoding, data)
            continue
        if encoding == "gb18030" and not (_looks_chinese(data) or not _decodes(data, "cp1252")):
            continue
        return _checked(text, encoding, data)
    raise UndecodableFile("cannot be decoded as UTF-8, UTF-16, GB18030 or Windows-1252")


def _damaged_utf8(data: bytes) -> str | None:
    """UTF-8 text with a few invalid bytes, each replaced by U+FFFD; None when it is not that.

    Windows-1252 and GB18030 text hardly ever holds a valid UTF-8 multi-byte sequence, while
    real UTF-8 text with a damaged byte holds many: ask for four valid ones per invalid one.
    """
    text = data.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - data.count("\ufffd".encode())
    valid_multibyte = len(text) - len(text.encode("ascii", errors="ignore")) - text.count("\ufffd")
    if invalid > 0 and valid_multibyte >= _VALID_PER_INVALID * invalid:
        return text
    return None


def _strict(data: bytes, encoding: str, evidence: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        raise UndecodableFile(f"{evidence} {encoding}, but byte {error.start} is invalid there") from None


def _checked(text: str, encoding: str, data: bytes) -> DecodedText:
    """``text``, decoded from ``data``, unless it is binary or empty. Control characters are
    counted in UTF-8 bytes: a UTF-8 file's own (the same control bytes, which are ASCII, whatever
    a damaged byte became; encoding the text again cost 0.3 s per 10^5 abstracts), else the text's."""
    text = text.removeprefix("\ufeff")
    encoded = data if encoding.startswith("utf-8") else text.encode("utf-8", errors="surrogatepass")
    controls = len(encoded) - len(encoded.translate(None, _CONTROL_BYTES))
    if controls > _MAX_CONTROL_SHARE * len(text):
        raise UndecodableFile(f"binary file: {controls} control characters in {len(text)} decoded as {encoding}")
    if not text or text.isspace():  # as `not text.strip()`, without copying the text
        raise UndecodableFile("empty file (whitespace only)")
    return DecodedText(text=text, encoding=encoding)


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _utf16_without_bom(data: bytes) -> str | None:
    """UTF-16 text in a Latin script has NUL in (nearly) every high byte of its code units."""
    even_nuls = data[0::2].count(0)
    odd_nuls = data[1::2].count(0)
    units = len(data) // 2 or 1
    if odd_nuls > 0.3 * units and even_nuls < 0.05 * units:
        return "utf-16-le"
    if even_nuls > 0.3 * units and odd_nuls < 0.05 * units:
        return "utf-16-be"
    return None


def _looks_chinese(data: bytes) -> bool:
    """GB18030 text pairs its high bytes; Windows-1252 prose has isolated accented letters.

    Latin text in which every high byte is followed by a letter also decodes as GB18030,
    so strictness alone cannot tell them apart. Count the high bytes that sit in a
    two-byte pair (high, high) or a four-byte sequence (high, digit, high, digit): near
    1.0 for Chinese, low for Latin-script prose.
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    is_high = raw >= 0x81
    if not is_high.any():
        return False
    is_digit = (raw >= 0x30) & (raw <= 0x39)
    paired = np.zeros_like(is_high)
    paired[1:] |= is_high[:-1]
    paired[:-1] |= is_high[1:]
    four_byte = np.zeros_like(is_high)
    if len(raw) >= 4:
        four_byte[:-3] = is_high[:-3] & is_digit[1:-2] & is_high[2:-1] & is_digit[3:]
        four_byte[2:] |= four_byte[:-2].copy()
    return (is_high & (paired | four_byte)).sum() / is_high.sum() >= 0.9
