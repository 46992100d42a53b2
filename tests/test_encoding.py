import codecs

import pytest

from paperhouse.ingest.encoding import DecodedText, UndecodableFile, decode

TEXT = "ICLR 2026 Papers\n\nWe study “naïve” fine‑tuning of LLMs — café résumé.\n"
CHINESE = "ICLR 2026 论文列表\n\n我们提出了一种新的大型语言模型推理方法，并在多个基准上验证其有效性。\n"


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        (TEXT.encode("utf-8"), "utf-8"),
        (codecs.BOM_UTF8 + TEXT.encode("utf-8"), "utf-8-sig"),
        (TEXT.encode("utf-16"), "utf-16"),  # with BOM
        (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), "utf-16"),
        (TEXT.encode("utf-16-le"), "utf-16-le"),
        (TEXT.encode("utf-16-be"), "utf-16-be"),
        (CHINESE.encode("gb18030"), "gb18030"),
        (TEXT.replace("‑", "-").encode("cp1252"), "cp1252"),
    ],
)
def test_detects_encoding_and_decodes_exactly(data, encoding):
    decoded = decode(data)
    assert decoded.encoding == encoding
    expected = CHINESE if encoding == "gb18030" else TEXT
    if encoding == "cp1252":
        expected = TEXT.replace("‑", "-")
    assert decoded.text == expected


def test_latin_text_whose_accents_happen_to_be_valid_gb18030_stays_cp1252():
    # "naïve" in cp1252 is bytes that GB18030 also accepts; it must not become Chinese.
    data = "A naïve approach to naïve parsing by Müller.".encode("cp1252")
    data.decode("gb18030")  # the trap: strict GB18030 decoding succeeds
    assert decode(data).encoding == "cp1252"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty file"),
        (b"  \n\n \r\n", "empty file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00" * 20, "binary file"),
        (bytes(range(256)) * 4, "binary file"),
        (b"abc \x81\x20 def \x8d\x20", "cannot be decoded"),
    ],
)
def test_rejects_what_is_not_text(data, reason):
    with pytest.raises(UndecodableFile, match=reason):
        decode(data)


def test_mostly_english_gb18030_file_with_four_byte_characters():
    # A Chinese header, English abstracts, and characters GB18030 encodes in four bytes (é, ≈, ü).
    text = "ICLR 2026 论文列表\n\nWe study naïve Bayes ≈ logistic regression (Müller, 2020) — “clearly”.\n"
    assert decode(text.encode("gb18030")) == DecodedText(text=text, encoding="gb18030")


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "cp1252"])
def test_a_few_control_characters_are_kept_and_one_more_makes_a_binary_file(encoding):
    # 20,000 characters, accented ones among them (more bytes than characters in UTF-8 and UTF-16):
    # up to 0.1% of the characters may be control characters, counted as characters.
    body = "Über naïve Modelle, café résumé. " * 606 + "x" * 2
    assert len(body) == 20_000
    for controls, accepted in ((20, True), (21, False)):
        text = "\x1b" * controls + body
        if accepted:
            assert decode(text.encode(encoding)).text == text
        else:
            with pytest.raises(UndecodableFile, match="binary file: 21 control characters"):
                decode(text.encode(encoding))
