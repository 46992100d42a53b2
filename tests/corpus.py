"""The bundled seeds as test material."""

import random
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO / "seeds"


def seed_abstracts() -> list[str]:
    """The bundled abstracts (header dropped), in file order."""
    abstracts = []
    for path in sorted(SEEDS.glob("*.txt")):
        paragraphs = [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
        abstracts.extend(paragraphs[1:])
    return abstracts


# Text as scrapers leave it: every kind of blank line and line ending, whitespace of every kind,
# headers or none, stray control bytes and damage, markup and characters NFKC changes.
_BLANK_LINES = [
    "\n\n",
    "\n\n\n",
    "\n \n",
    "\n\n \n",
    "\n \n \n",
    "\n\t\n\n",
    "\n\u00a0\n",
    "\n\u3000\n\u3000\n",
    "\n\x0b\n",
    "\n\x0c\n\n\n",
    "\n\x1c\n",
    "\n\x85\n",
    "\n\u2028\n",
    "\n \n\n \n",
    "\n\n\n\n\n",
]
_ODD_PARAGRAPHS = [
    "\x1c",
    "\x1f\x1e",
    " ",
    "\u00a0",
    "a",
    "Page 3",
    "1 2 3 4 5 6 7 8 9 " * 20,
    "\u3000",
    "\x00abc",
    "\ufffd" * 3,
    "…",
    "...",
    "   \n  ",
    "\x1c\n\x1d",
    "ﬁne-tuning ＧＰＴ-４ on ½ the data…",
    "e\u0301te\u0301 cafe\u0301 \u1100\u1161\u11a8",
    "x² µ Å Ω ‑ ‒ ⁇",
    "“quoted” ‘single’ – — ‐",
    "\\textit{LaTeX} and \\emph{\\textbf{nested}} *markdown* _emph_ `code` $x$",
    "fine-\n tuning",
    "tab\tand\x0bvertical\x0cfeed\u2028line\u2029para\x85next\u200aend  ",
]
_HEADERS = [
    "ICLR 2026 Papers",
    "ICLR 2026 论文列表",
    "  NeurIPS 2025 Accepted Papers  ",
    "My reading list",
    "A sentence that ends.",
    "",
    "\x1c",
    "２０２６ list",
    " \nICLR 2026 Papers",
    "ICLR 2026 Papers\n ",
    "ICLR 2026 Papers\n\x1c",
]


def awkward_texts(n: int = 80) -> list[str]:
    """Files' worth of text mixing the bundled abstracts with awkward pieces (the same every call):
    material to compare a vectorised function with its plain definition."""
    rng = random.Random(7)
    abstracts = seed_abstracts()
    texts = []
    for _ in range(n):
        paragraphs = [
            rng.choice(abstracts) if rng.random() < 0.5 else rng.choice(_ODD_PARAGRAPHS)
            for _ in range(rng.randint(0, 10))
        ]
        paragraphs = [p.replace(" ", "\n", 3) if rng.random() < 0.2 else p for p in paragraphs]
        text = rng.choice(["", "\n", "\n\n", " \n\n"]) + rng.choice(_HEADERS)
        text += "".join(rng.choice(_BLANK_LINES) + p for p in paragraphs) + rng.choice(["", "\n", "\n \n"])
        texts.append(text.replace("\n", rng.choice(["\n", "\n", "\r\n", "\r"])))
    return texts


# File names a folder may hold, each to be read as data, never as code or SQL.
HOSTILE_NAMES = [
    "it's; DROP TABLE marts.papers; --.txt",
    'double "quoted" name.txt',
    "spaces   and\ttab.txt",
    "new\nline.txt",
    "back\\slash.txt",
    "论文 列表 2026.txt",
    "émoji 📄.txt",
    "$(rm -rf ~).txt",
]
