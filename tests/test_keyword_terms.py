"""Author keywords join the terms (issue 41, requirement 2): a keyword that a mined term means (its
key, or an acronym defined in the abstracts: GAN = generative adversarial network) marks that term;
one that no abstract gives is a term of kind ``keyword``, counted by the papers whose authors give
it, in term_summary and term_trends too, and never in paper_terms. Text lists have no keywords and
get no keyword terms (tests/test_pipeline.py checks the bundled seeds' warehouse)."""

import shutil
from pathlib import Path

import polars as pl
import pytest
from corpus import SEEDS

from paperhouse.nlp.terms.extraction import index_terms
from paperhouse.nlp.terms.keywords import KEYWORD_TERM_SCHEMA, keyword_terms
from paperhouse.warehouse.database import connect

GAN_DEFINED = (
    "Generative adversarial networks (GANs) synthesise realistic images, but their training is unstable. "
    "We propose a spectral penalty on the discriminator that stabilises GAN training and improves sample "
    "diversity on three image benchmarks while keeping the generator architecture unchanged."
)
GAN_USED = (
    "We study mode collapse in generative adversarial networks. A curriculum over discriminator capacity "
    "keeps GANs from collapsing and matches the sample diversity of diffusion models on face and scene "
    "datasets, at a fraction of their sampling cost."
)
GRAPHS = (
    "Graph neural networks propagate messages along edges and struggle with long-range dependencies. "
    "We add virtual nodes chosen by spectral clustering, which shortens paths between distant nodes and "
    "improves accuracy on molecular property prediction and citation benchmarks."
)
OTHER = (
    "Wind turbines lose efficiency when their blades ice over in winter storms. We fit a physics-informed "
    "regression to supervisory sensor data that predicts icing an hour ahead, so operators can start "
    "heating the blades before the power curve degrades."
)


def _index(texts: list[str]):
    return index_terms(pl.DataFrame({"paper_id": [f"p{i}" for i in range(len(texts))], "text": texts}))


def _match(index, keys: dict[str, int], capitalised: tuple[str, ...] = ()) -> dict[str, tuple]:
    """``keys``: keyword key -> papers; ``capitalised``: the keys most authors write as acronyms are."""
    keywords = pl.DataFrame(
        {"keyword_key": list(keys), "papers": list(keys.values()), "capitalised": [key in capitalised for key in keys]}
    )
    frame = keyword_terms(keywords, index.terms, index.aliases)
    assert frame.schema == pl.Schema(KEYWORD_TERM_SCHEMA)
    return {row["keyword_key"]: (row["term"], row["kind"], row["matched_by"]) for row in frame.iter_rows(named=True)}


def test_a_keyword_joins_the_mined_term_it_means_by_its_key_or_its_acronym():
    index = _index([GAN_DEFINED, GAN_USED, GRAPHS, OTHER])
    assert "generative adversarial network" in index.terms["term"].to_list()
    matched = _match(
        index,
        {
            "gan": 2,  # the acronym the abstracts define
            "gans": 1,
            "generative adversarial networks": 1,  # the plural
            "generative-adversarial network": 1,  # another spelling
            "graph neural networks (gnns)": 1,  # a parenthesis aside: the long form decides
            "mode collapse": 1,
            "novel mode collapse": 1,  # a boilerplate word the terms drop
        },
        capitalised=("gan", "gans"),
    )
    gan = ("generative adversarial network", "phrase")
    assert matched["gan"] == (*gan, "acronym") and matched["gans"] == (*gan, "acronym")
    assert matched["generative adversarial networks"] == (*gan, "term")
    assert matched["generative-adversarial network"] == (*gan, "term")
    assert matched["graph neural networks (gnns)"] == ("graph neural network", "phrase", "term")
    assert matched["mode collapse"] == matched["novel mode collapse"] == ("mode collapse", "phrase", "term")


def test_a_keyword_no_abstract_gives_is_a_keyword_term_spelled_as_most_authors_write_it():
    index = _index([GAN_DEFINED, GAN_USED, GRAPHS, OTHER])
    matched = _match(
        index,
        {
            "hyperbolic-origami": 1,
            "hyperbolic origami": 2,
            "quantum fold": 1,
            "quantum folds": 1,
            "gnn": 1,
            "mixture of experts": 1,
            "gan": 1,  # the acronym the abstracts define, written as a word (Gan): no acronym
            "0.5 mode": 1,  # what the terms' words leave out: matched to nothing
            "3d mode collapse": 1,
        },
        capitalised=("gnn",),
    )
    # Spellings of one key are one term, shown as most papers write it, then the first in order.
    assert matched["hyperbolic origami"] == matched["hyperbolic-origami"] == ("hyperbolic origami", "keyword", None)
    assert matched["quantum fold"] == matched["quantum folds"] == ("quantum fold", "keyword", None)
    # An acronym no abstract defines is a keyword of its own, as is a phrase holding a function word.
    assert matched["gnn"] == ("gnn", "keyword", None)
    assert matched["mixture of experts"] == ("mixture of experts", "keyword", None)
    assert matched["gan"] == ("gan", "keyword", None)
    assert matched["0.5 mode"] == ("0.5 mode", "keyword", None)
    assert matched["3d mode collapse"] == ("3d mode collapse", "keyword", None)


def test_no_keywords_no_work():
    index = _index([GAN_DEFINED, OTHER])
    empty = pl.DataFrame(schema={"keyword_key": pl.String, "papers": pl.Int32, "capitalised": pl.Boolean})
    frame = keyword_terms(empty, index.terms, index.aliases)
    assert frame.height == 0 and frame.schema == pl.Schema(KEYWORD_TERM_SCHEMA)


def _query(warehouse: Path, sql: str) -> list[tuple]:
    with connect(warehouse, read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.mark.slow
def test_keywords_of_an_export_merge_into_mined_terms_or_become_keyword_terms(tmp_path):
    """A text list and a CSV export (one paper in both), one Dagster run."""
    from orchestration.runner import run_all
    from paperhouse.settings import resolve_paths

    seeds = tmp_path / "seeds"
    seeds.mkdir()
    first_seed = sorted(SEEDS.glob("*.txt"))[0]
    shutil.copy(first_seed, seeds)
    (seeds / "workshop_2024.txt").write_text(f"workshop 2024 Papers\n\n{GAN_DEFINED}\n\n{OTHER}\n", encoding="utf-8")
    pl.DataFrame(
        {
            "title": ["Spectral GANs", "Curricula Against Collapse", "Virtual Nodes"],
            "abstract": [GAN_DEFINED, GAN_USED, GRAPHS],
            "keywords": [
                "GAN; Hyperbolic Origami",
                '["GANs", "hyperbolic origami", "Mode Collapse"]',
                "Graph Neural Networks, Hyperbolic-Origami",
            ],
        }
    ).write_csv(seeds / "workshop_2024.csv")

    paths = resolve_paths(seeds, tmp_path / "out" / "warehouse.duckdb")
    outcome = run_all(paths)
    assert outcome.success, outcome.reason
    assert outcome.checks_failed == []
    w = paths.warehouse

    # Each keyword names its term: GAN and GANs the phrase the abstracts define them by.
    joined = dict(_query(w, "select keyword, term || ' / ' || coalesce(matched_by, 'none') from marts.paper_keywords"))
    assert joined == {
        "GAN": "generative adversarial network / acronym",
        "GANs": "generative adversarial network / acronym",
        "Mode Collapse": "mode collapse / term",
        "Graph Neural Networks": "graph neural network / term",
        "Hyperbolic Origami": "hyperbolic origami / none",
        "hyperbolic origami": "hyperbolic origami / none",
        "Hyperbolic-Origami": "hyperbolic origami / none",
    }
    terms = {
        term: (kind, doc_freq, key_papers, keyword_papers)
        for term, kind, doc_freq, key_papers, keyword_papers in _query(
            w,
            """
            select term, kind, doc_freq, key_papers, keyword_papers from marts.terms
            where keyword_papers > 0 or kind = 'keyword'""",
        )
    }
    # The mined phrase keeps its kind and counts the two papers whose authors call it GAN; the
    # keyword no abstract gives is a keyword term of the three papers whose authors give it.
    assert terms["generative adversarial network"][0] == "phrase"
    assert terms["generative adversarial network"][3] == 2
    assert terms["mode collapse"][3] == terms["graph neural network"][3] == 1
    assert terms["hyperbolic origami"] == ("keyword", 3, 0, 3)
    assert set(terms) == {
        "generative adversarial network",
        "mode collapse",
        "graph neural network",
        "hyperbolic origami",
    }
    # The mined term keeps its id; the keyword term's id is made as every term's is.
    assert _query(w, "select term_id = 'term_' || left(md5(term), 12) from marts.terms where kind = 'keyword'") == [
        (True,)
    ]
    assert _query(w, "select count(*) from raw.terms where term = 'hyperbolic origami'") == [(0,)]

    # Spellings that differ from the term are its aliases; an acronym the abstracts give stays theirs.
    aliases = set(
        _query(w, "select alias, term, alias_kind, papers from marts.term_aliases where alias_kind = 'keyword'")
    )
    assert aliases == {
        ("GANs", "generative adversarial network", "keyword", 1),
        ("Graph Neural Networks", "graph neural network", "keyword", 1),
        ("Hyperbolic-Origami", "hyperbolic origami", "keyword", 1),
    }
    assert _query(w, "select alias_kind from marts.term_aliases where alias = 'GAN'") == [("acronym",)]

    # Keyword terms stay out of paper_terms (and so out of topics and similar papers).
    assert _query(
        w,
        "select count(*) from marts.paper_terms join marts.terms using (term_id) where terms.kind = 'keyword'",
    ) == [(0,)]

    # The dashboard's summaries see it: term_summary and term_trends count its papers per list.
    summary = _query(
        w,
        """
        select kind, aliases, term_papers, venue, year, papers, key_papers
        from marts.term_summary where term = 'hyperbolic origami'""",
    )
    assert summary == [("keyword", "Hyperbolic-Origami", 3, "workshop", 2024, 3, 0)]
    trends = _query(
        w,
        """
        select kind, venue, year, papers, list_papers, first_year_overall
        from marts.term_trends where term = 'hyperbolic origami'""",
    )
    assert trends == [("keyword", "workshop", 2024, 3, 4, 2024)]
