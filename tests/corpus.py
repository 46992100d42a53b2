"""The bundled seeds as test material."""

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
