"""Trends by venue and year (issue 41, requirement 4): the marts topic_trends, term_trends and
emerging_terms, and the dashboard's Trends page.

One `paperhouse run` over the bundled seeds (ICLR 2026), an ICLR 2025 export, a synthetic list and
the real lists of ../shared/realdata/conferences/inputs (ICLR 2021, NeurIPS 2022): the session's
shared build of the engines' folder (tests/warehouses.py). The marts are checked against the same
figures computed here another way, from marts.papers and marts.paper_terms; a browser then reads
the Trends page's charts and tables and compares them with the warehouse.
"""

import itertools
import json
import math
import re
from pathlib import Path

import duckdb
import polars as pl
import pytest
from browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
from corpus import REPO

from paperhouse.dashboard import trend_charts
from paperhouse.evaluation import real_data

pytestmark = pytest.mark.slow  # a whole run of the real lists

ARTIFACTS = REPO / "test-artifacts" / "dashboard"
REAL_LISTS = ("iclr_2021.txt", "neurips_2022.txt")


def _frame(warehouse: Path, sql: str) -> pl.DataFrame:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(sql).pl()


def _header_list(path: Path) -> tuple[str, int]:
    """The venue and year a list's header names ("ICLR 2026 Papers", "ICLR 2026 论文列表")."""
    venue, year = re.match(r"\s*(\S+)\s+(\d{4})\b", path.read_text(encoding="utf-8").split("\n", 1)[0]).groups()
    return venue, int(year)


@pytest.fixture(scope="module")
def trends_run(engines_duckdb_build) -> tuple[Path, set[tuple[str, int]]]:
    """The session's build of the engines' folder (tests/warehouses.py): the bundled seeds (ICLR
    2026), an ICLR 2025 export, a synthetic list (SYNTH 2000) and the real lists; with the venue and
    year of every list, read from its header line or, for the export, its rows."""
    seeds = engines_duckdb_build.paths.seeds_dir
    missing = [name for name in REAL_LISTS if not (seeds / name).is_file()]
    assert not missing, f"the real lists {missing} are missing at {real_data.realdata_dir()}"
    headers = {_header_list(path) for path in seeds.glob("*.txt")}
    for export in seeds.glob("*.jsonl"):
        rows = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
        headers |= {(row["venue"], row["year"]) for row in rows}
    return engines_duckdb_build.warehouse, headers


def _lists(warehouse: Path) -> pl.DataFrame:
    """Each list with a year, its papers and the venue's previous list, from marts.papers."""
    return (
        _frame(
            warehouse,
            "select venue, year, count(*) as list_papers from marts.papers where year is not null group by all",
        )
        .sort("venue", "year")
        .with_columns(
            previous_year=pl.col("year").shift(1).over("venue"),
            previous_list_papers=pl.col("list_papers").shift(1).over("venue"),
            next_year=pl.col("year").shift(-1).over("venue"),
        )
    )


def test_the_trend_marts_cover_every_list_with_a_year(trends_run):
    warehouse, headers = trends_run
    lists = _lists(warehouse)
    assert {(r["venue"], r["year"]) for r in lists.to_dicts()} == headers  # every list with a year
    shown = _frame(
        warehouse,
        "select distinct venue, year, list_papers, previous_year, previous_list_papers from marts.topic_trends",
    )
    assert shown.sort("venue", "year").to_dicts() == lists.drop("next_year").to_dicts()
    terms = _frame(warehouse, "select distinct venue, year, list_papers, previous_year from marts.term_trends")
    assert terms.sort("venue", "year").to_dicts() == lists.select(terms.columns).to_dicts()


def test_topic_shares_of_each_list_sum_to_one_per_level(trends_run):
    warehouse, _ = trends_run
    sums = _frame(
        warehouse,
        """
        select venue, year, level, sum(papers) as papers, max(list_papers) as list_papers, sum(share_of_list) as shares
        from marts.topic_trends group by all""",
    )
    assert sums.height == 2 * _lists(warehouse).height  # both levels of every list
    assert (sums["papers"] == sums["list_papers"]).all()
    assert ((sums["shares"] - 1).abs() < 1e-9).all()
    # The same papers topic_summary counts per list, and each change is from the venue's previous list.
    mismatched = _frame(
        warehouse,
        """
        select count(*) as n from marts.topic_trends t
        join marts.topic_summary s
            on s.topic_id = t.topic_id and s.venue is not distinct from t.venue and s.year = t.year
        left join marts.topic_trends p
            on p.topic_id = t.topic_id and p.venue is not distinct from t.venue and p.year = t.previous_year
        where s.papers <> t.papers
            or t.share_change is distinct from t.share_of_list - p.share_of_list
            or t.previous_papers is distinct from p.papers""",
    )
    assert mismatched["n"].item() == 0


def _expected_term_trends(warehouse: Path) -> pl.DataFrame:
    """term_trends computed in Polars from marts.papers, marts.paper_terms and, for the terms of kind
    keyword (which never enter paper_terms), the papers whose authors give them (marts.paper_keywords)."""
    lists = _lists(warehouse)
    uses = _frame(
        warehouse,
        """
        with uses as (
            select paper_id, term_id from marts.paper_terms
            union
            select k.paper_id, k.term_id
            from marts.paper_keywords k join marts.terms t using (term_id) where t.kind = 'keyword'
        )
        select u.term_id, p.venue, p.year, count(*) as papers
        from uses u join marts.papers p using (paper_id)
        where p.year is not null group by all""",
    )
    # A row where the term is used, and one in the venue's next list (where it may have dropped out).
    following = (
        uses.join(lists.select("venue", "year", "next_year"), on=["venue", "year"], nulls_equal=True)
        .filter(pl.col("next_year").is_not_null())
        .select("term_id", "venue", year="next_year")
    )
    keys = pl.concat([uses.select("term_id", "venue", "year"), following]).unique()
    previous = uses.rename({"year": "previous_year", "papers": "previous_papers"})
    firsts = uses.group_by("term_id", "venue").agg(first_year_in_venue=pl.col("year").min())
    return (
        keys.join(lists, on=["venue", "year"], nulls_equal=True)
        .join(uses, on=["term_id", "venue", "year"], how="left", nulls_equal=True)
        .join(previous, on=["term_id", "venue", "previous_year"], how="left", nulls_equal=True)
        .join(firsts, on=["term_id", "venue"], nulls_equal=True)
        .with_columns(
            papers=pl.col("papers").fill_null(0),
            previous_papers=pl.when(pl.col("previous_year").is_not_null()).then(pl.col("previous_papers").fill_null(0)),
            first_year_overall=pl.col("first_year_in_venue").min().over("term_id"),
        )
        .with_columns(
            share_of_list=pl.col("papers") / pl.col("list_papers"),
            previous_share_of_list=pl.col("previous_papers") / pl.col("previous_list_papers"),
        )
        .with_columns(share_change=pl.col("share_of_list") - pl.col("previous_share_of_list"))
    )


def test_term_trends_are_each_lists_share_its_change_and_first_years(trends_run):
    warehouse, _ = trends_run
    columns = [
        "term_id",
        "venue",
        "year",
        "list_papers",
        "papers",
        "share_of_list",
        "previous_year",
        "previous_papers",
        "previous_share_of_list",
        "share_change",
        "first_year_in_venue",
        "first_year_overall",
    ]
    expected = _expected_term_trends(warehouse).select(columns).sort("term_id", "venue", "year")
    actual = _frame(warehouse, f"select {', '.join(columns)} from marts.term_trends").sort("term_id", "venue", "year")
    assert actual.height == expected.height
    floats = ["share_of_list", "previous_share_of_list", "share_change"]
    assert (
        actual.drop(floats)
        .cast({"papers": pl.Int64, "previous_papers": pl.Int64, "list_papers": pl.Int64})
        .equals(expected.drop(floats).cast({"papers": pl.Int64, "previous_papers": pl.Int64, "list_papers": pl.Int64}))
    )
    for column in floats:
        difference = (actual[column] - expected[column]).abs()
        assert (actual[column].is_null() == expected[column].is_null()).all(), column
        assert difference.max() is None or difference.max() < 1e-12, column
    # Where a term is used, term_trends counts the papers term_summary does.
    summary = _frame(warehouse, "select term_id, venue, year, papers from marts.term_summary where year is not null")
    used = actual.filter(pl.col("papers") > 0).select("term_id", "venue", "year", "papers")
    assert (
        used.sort(used.columns)
        .cast({"papers": pl.Int64})
        .equals(summary.sort(summary.columns).cast({"papers": pl.Int64}))
    )
    # A venue's first list has nothing to change from; every other list does.
    first_lists = actual.filter(pl.col("previous_year").is_null())
    assert first_lists["share_change"].is_null().all() and first_lists["previous_papers"].is_null().all()
    assert actual.filter(pl.col("previous_year").is_not_null())["share_change"].is_not_null().all()


def test_emerging_terms_are_the_risen_terms_with_support_ranked_by_growth(trends_run):
    warehouse, _ = trends_run
    trends = _frame(warehouse, "select * from marts.term_trends where previous_year is not null")
    tested: dict[tuple, list[dict]] = {}
    for row in trends.to_dicts():
        if row["papers"] >= math.ceil(math.sqrt(row["list_papers"])):
            tested.setdefault((row["venue"], row["year"]), []).append(row)
    ranked = []
    for (venue, year), rows in sorted(tested.items(), key=lambda item: (item[0][0] or "", item[0][1])):
        # Under 5% that any of the list's tested terms passes by chance: the normal tail beyond z is
        # below exp(-z^2 / 2), and it must be below 0.05 / m for each of the m terms.
        threshold = math.sqrt(2 * math.log(len(rows) / 0.05))
        risen = []
        for row in rows:
            n, n_before = row["list_papers"], row["previous_list_papers"]
            pooled = (row["papers"] + row["previous_papers"]) / (n + n_before)
            if row["share_change"] > 0:
                z = row["share_change"] / math.sqrt(pooled * (1 - pooled) * (1 / n + 1 / n_before))
                if z >= threshold:
                    risen.append(row)
        risen.sort(key=lambda r: (-r["share_change"], -r["papers"], r["term"]))
        ranked += [(venue, year, rank, r["term_id"], len(rows)) for rank, r in enumerate(risen, start=1)]
    columns = "venue, year, rank, term_id, tested_terms"
    actual = _frame(warehouse, f"select {columns} from marts.emerging_terms order by venue, year, rank")
    assert actual.rows() == ranked
    # ICLR 2026 has ICLR 2021 before it, so its growth is measured: the page must have terms to show.
    assert ranked
    # A term new to the venue is first used in the venue that year.
    new = _frame(warehouse, "select year, first_year_in_venue from marts.emerging_terms where previous_papers = 0")
    assert (new["year"] == new["first_year_in_venue"]).all()


def _points(page, selector: str) -> dict[str, list[tuple]]:
    """Each chart's points: chart key -> [(venue, year, papers, share)] as drawn."""
    charts = page.eval_on_selector_all(
        selector,
        """figures => figures.map(f => [f.dataset.chart, Array.from(f.querySelectorAll('circle')).map(c =>
            [c.dataset.venue, Number(c.dataset.year), Number(c.dataset.papers), Number(c.dataset.share),
             Number(c.getAttribute('cy'))])])""",
    )
    return {key: points for key, points in charts}


def _assert_drawn_as(points: list[list], expected: dict[tuple, tuple[int, float]]) -> None:
    """The chart has one point per list, at the list's papers and share, higher for a larger share."""
    drawn = {(venue, year): (papers, share) for venue, year, papers, share, _ in points}
    assert drawn.keys() == expected.keys()
    for key, (papers, share) in expected.items():
        assert drawn[key][0] == papers and drawn[key][1] == pytest.approx(share, abs=5e-7), key
    by_share = sorted(points, key=lambda p: p[3])
    assert all(a[4] >= b[4] for a, b in itertools.pairwise(by_share))


@pytest.mark.browser
def test_trends_page_shows_the_lists_side_by_side(trends_run):
    from playwright.sync_api import sync_playwright

    require_chromium()
    warehouse, headers = trends_run
    site = warehouse.parent / "dashboard"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    lists = _lists(warehouse).sort("year", "venue")
    labels = [f"{r['venue']} {r['year']}" for r in lists.to_dicts()]
    assert set(labels) == {f"{venue} {year}" for venue, year in headers}
    level_one = _frame(warehouse, "select * from marts.topic_trends where level = 1")
    top_topics = (
        level_one.group_by("topic_id")
        .agg(pl.col("papers").sum())
        .sort("papers", "topic_id", descending=[True, False])
        .head(trend_charts.TOP_TOPICS)
    )
    emerging = _frame(warehouse, "select * from marts.emerging_terms order by rank, year desc, venue")
    term_trends = _frame(warehouse, "select * from marts.term_trends")

    def term_expected(term_id: str) -> dict[tuple, tuple[int, float]]:
        rows = {(r["venue"], r["year"]): r for r in term_trends.filter(term_id=term_id).to_dicts()}
        return {
            (r["venue"], r["year"]): (rows[key]["papers"], rows[key]["share_of_list"])
            if (key := (r["venue"], r["year"])) in rows
            else (0, 0.0)
            for r in lists.to_dicts()
        }

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.goto((site / "index.html").as_uri())
        page.get_by_role("link", name="Trends").click()
        assert page.title().endswith("Trends")

        # The lists side by side: in the list table, as the topic table's columns, on every chart.
        shown_lists = page.eval_on_selector_all(
            'table[data-table="trend-lists"] tbody tr', "rows => rows.map(r => r.dataset.key)"
        )
        assert shown_lists == labels
        columns = page.eval_on_selector_all(
            'table[data-table="topic-shares"] thead th', "ths => ths.map(th => th.innerText)"
        )
        assert columns[1:] == labels

        topic_points = _points(page, 'figure[data-chart^="topic-"]')
        assert list(topic_points) == [f"topic-{t}" for t in top_topics["topic_id"]]
        for topic_id in top_topics["topic_id"]:
            rows = level_one.filter(topic_id=topic_id).to_dicts()
            _assert_drawn_as(
                topic_points[f"topic-{topic_id}"],
                {(r["venue"], r["year"]): (r["papers"], r["share_of_list"]) for r in rows},
            )
        # A venue with two lists is a line; one with a single list a point.
        lines = page.eval_on_selector_all(
            'figure[data-chart^="topic-"] g.series',
            "gs => gs.map(g => [g.dataset.venue, g.querySelectorAll('polyline').length])",
        )
        per_venue = dict(lists.group_by("venue").len().rows())
        assert lines and all(n == (1 if per_venue[venue] > 1 else 0) for venue, n in lines)

        # Emerging terms: the charts follow the ranks, each point the term's share of a list (0 where unused).
        emerging_points = _points(page, 'figure[data-chart^="emerging-"]')
        charted = emerging.unique("term_id", keep="first", maintain_order=True).head(trend_charts.TERM_CHARTS)
        assert list(emerging_points) == [f"emerging-{t}" for t in charted["term_id"]]
        assert emerging_points  # ICLR 2026 has emerging terms (the previous test)
        for term_id in charted["term_id"]:
            _assert_drawn_as(emerging_points[f"emerging-{term_id}"], term_expected(term_id))
        table = page.eval_on_selector_all(
            'table[data-table="emerging-terms"] tbody tr',
            "rows => rows.map(r => [r.cells[2].innerText, r.dataset.key])",
        )
        assert table == [[str(r["rank"]), r["term_id"]] for r in emerging.to_dicts()]

        # New terms: the most used terms a venue's list uses for the first time.
        new_points = _points(page, 'figure[data-chart^="new-"]')
        new_terms = (
            term_trends.filter(pl.col("previous_year").is_not_null(), pl.col("first_year_in_venue") == pl.col("year"))
            .sort("papers", "term", descending=[True, False])
            .unique("term_id", keep="first", maintain_order=True)
            .head(trend_charts.TERM_CHARTS)
        )
        assert list(new_points) == [f"new-{t}" for t in new_terms["term_id"]]
        for term_id in new_terms["term_id"]:
            _assert_drawn_as(new_points[f"new-{term_id}"], term_expected(term_id))
        page.screenshot(path=ARTIFACTS / "5-trends.png", full_page=True)
        browser.close()
