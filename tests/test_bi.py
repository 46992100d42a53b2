"""What BI tools read: the BI-shaped marts, the check history, the Parquet export and the dashboard.

Two `paperhouse run`s on the bundled seeds plus a second list (a copy, a new paper and a stray
line), the second a full refresh; a browser then reads the dashboard's numbers and compares them
with the published warehouse.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
from browser import CHROMIUM, CHROMIUM_ARGS, require_chromium
from corpus import REPO, SEEDS, seed_abstracts
from dagster import DagsterEventType, DagsterInstance

pytestmark = pytest.mark.slow  # three whole runs

ARTIFACTS = REPO / "test-artifacts" / "dashboard"
ABSTRACTS = seed_abstracts()
NEW_ABSTRACT = (
    "Tabular foundation models promise zero-shot prediction on unseen tables, yet their attention over rows scales "
    "quadratically. We introduce a sketching layer that summarises rows into a fixed number of prototypes, keeping "
    "accuracy on forty benchmark datasets while cutting memory by an order of magnitude."
)
# Checks that run after the quality asset: recorded for a run by the run after it.
LATE_ASSETS = {"raw/check_evaluations", "marts/quality_runs"}


def _paperhouse(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "paperhouse.cli", *args], capture_output=True, text=True, env=env, timeout=900
    )


def query(warehouse: Path, sql: str, parameters: list | None = None) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(sql, parameters or []).fetchall()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run killed before the quality asset, then two runs into the same warehouse (the second a
    full refresh), with the history after each of those, and the three run ids, oldest first."""
    root = tmp_path_factory.mktemp("bi")
    seeds = root / "seeds"
    shutil.copytree(SEEDS, seeds)
    (seeds / "neurips.txt").write_text(f"NeurIPS 2025 Papers\n\n{ABSTRACTS[3]}\n\n{NEW_ABSTRACT}\n\nPage 2\n")
    warehouse = root / "data" / "paperhouse.duckdb"
    home = root / "dagster_home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    command = ["run", "--seeds", str(seeds), "--warehouse", str(warehouse)]
    killed = _paperhouse(*command, env={**env, "PAPERHOUSE_FAILPOINTS": "dedup.before_commit"})
    assert killed.returncode != 0
    histories = []
    for extra in ([], ["--full-refresh"]):
        result = _paperhouse(*command, *extra, env=env)
        assert result.returncode == 0, result.stderr[-3000:]
        histories.append(query(warehouse, "select * from marts.quality_runs order by all"))
    with DagsterInstance.from_config(str(home)) as instance:
        run_ids = [run.run_id for run in reversed(instance.get_runs())]
        killed_checks = {
            (
                r.event_log_entry.dagster_event.event_specific_data.asset_key.to_user_string(),
                r.event_log_entry.dagster_event.event_specific_data.check_name,
            )
            for r in instance.get_records_for_run(run_ids[0], of_type=DagsterEventType.ASSET_CHECK_EVALUATION).records
        }
    return warehouse, histories, run_ids, killed_checks


def test_papers_carry_their_primary_topic(runs):
    warehouse = runs[0]
    mismatched = query(
        warehouse,
        """
        select count(*) from marts.papers p
        join marts.paper_topics pt on pt.paper_id = p.paper_id and pt.is_primary
        join marts.topics t on t.topic_id = pt.topic_id
        where p.primary_topic_id is distinct from t.topic_id or p.primary_topic_label is distinct from t.label""",
    )
    assert mismatched == [(0,)]
    assert query(warehouse, "select count(*) from marts.papers where primary_topic_label is null") == [(0,)]


def test_venue_summary_adds_up_to_the_marts(runs):
    warehouse = runs[0]
    summary = query(
        warehouse,
        "select venue, year, papers, records, duplicates, rejected_records from marts.venue_summary order by all",
    )
    papers = dict(
        ((v, y), n) for v, y, n in query(warehouse, "select venue, year, count(*) from marts.papers group by all")
    )
    records = query(
        warehouse,
        """
        select venue, year, count(*), count(*) filter (where match_kind <> 'canonical')
        from marts.paper_sources group by all order by all""",
    )
    assert [(v, y, n, r, d) for v, y, n, r, d, _ in summary] == [
        (v, y, papers.get((v, y), 0), r, d) for v, y, r, d in records
    ]
    assert len(summary) == 2  # the bundled ICLR list and the added NeurIPS one
    rejected = query(warehouse, "select count(*) from marts.rejected_records where record_no is not null")[0][0]
    assert sum(row[5] for row in summary) == rejected > 0


def test_topic_and_term_summaries_share_out_each_list(runs):
    warehouse = runs[0]
    lists = query(warehouse, "select count(*) from (select distinct venue, year from marts.papers)")[0][0]
    topics = query(warehouse, "select count(*) from marts.topics")[0][0]
    assert query(warehouse, "select count(*) from marts.topic_summary") == [(topics * lists,)]
    for level in (1, 2):  # topics, then subtopics: each level shares out every list
        shares = query(
            warehouse,
            "select venue, round(sum(share_of_list), 9), sum(papers) from marts.topic_summary"
            f" where level = {level} group by venue order by venue",
        )
        per_list = dict(query(warehouse, "select venue, count(*) from marts.papers group by venue"))
        assert [(v, s, n) for v, s, n in shares] == [(v, 1.0, per_list[v]) for v, _, _ in shares]
    expected = query(
        warehouse,
        """
        select pt.term_id, p.venue, p.year, count(*), count(*) filter (where pt.rank <= 10)
        from marts.paper_terms pt join marts.papers p using (paper_id)
        group by all order by all""",
    )
    assert (
        query(warehouse, "select term_id, venue, year, papers, key_papers from marts.term_summary order by all")
        == expected
    )
    key_papers = query(
        warehouse,
        "select term_id, sum(key_papers) from marts.term_summary group by all having sum(key_papers) > 0 order by all",
    )
    assert key_papers == query(
        warehouse, "select term_id, key_papers from marts.terms where key_papers > 0 order by all"
    )
    sae = query(warehouse, "select aliases from marts.term_summary where term = 'sparse autoencoder' limit 1")
    assert "SAE" in sae[0][0].split(", ")


def test_quality_runs_keep_every_check_of_every_run(runs):
    from orchestration.definitions import defs

    warehouse, (after_first, after_second), (killed_run, first_run, second_run), killed_checks = runs
    every_check = {(key.asset_key.to_user_string(), key.name) for key in defs.resolve_asset_graph().asset_check_keys}
    by_run: dict[str, set] = {}
    for run_id, _, asset, check_name, *_ in after_second:
        by_run.setdefault(run_id, set()).add((asset, check_name))
    assert set(by_run) == {killed_run, first_run, second_run}
    # A run killed before the quality asset is recorded by the next run, from the instance's event log.
    assert killed_checks and by_run[killed_run] == killed_checks
    # The first run's history is kept whole through the full refresh, and completed by the next run
    # with the checks that evaluate after the quality asset.
    assert set(after_first) <= set(after_second)
    assert by_run[first_run] == every_check
    assert by_run[second_run] == {c for c in every_check if c[0] not in LATE_ASSETS}
    rows = {(r[0], r[2], r[3]): r for r in after_second}
    warning = rows[(second_run, "raw/source_records", "no_rejected_records")]
    rejected = query(warehouse, "select count(*) from marts.rejected_records")[0][0]
    assert warning[4:6] == (False, "WARN") and json.loads(warning[6])["rejected_records"] == rejected
    suite = rows[(second_run, "marts/papers", "great_expectations_papers")]
    observed = json.loads(suite[6])["observed"]
    assert suite[4:6] == (True, "ERROR") and observed and all(o["success"] for o in observed)
    row_count = next(o for o in observed if o["expectation"].startswith("expect_table_row_count"))
    assert row_count["observed"] == query(warehouse, "select count(*) from marts.papers")[0][0]


def test_every_mart_is_exported_to_parquet(runs):
    warehouse = runs[0]
    export = warehouse.parent / "marts"
    marts = {t for (t,) in query(warehouse, "select table_name from duckdb_tables() where schema_name = 'marts'")}
    assert {p.stem for p in export.glob("*.parquet")} == marts
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for table in marts:
            expected = con.execute(f'select * from marts."{table}"').pl()
            exported = pl.read_parquet(export / f"{table}.parquet")
            assert exported.schema == expected.schema, table
            assert exported.sort(exported.columns).equals(expected.sort(expected.columns)), table
    # A link swapped to each new version; the previous one stays for readers that just resolved it.
    assert export.is_symlink()
    assert len(list((warehouse.parent / ".marts.versions").iterdir())) == 2


def _cells(page, table: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f'table[data-table="{table}"] tbody tr[data-key]',
        "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText.trim()))",
    )


@pytest.mark.browser
def test_dashboard_shows_the_warehouse_numbers(runs):
    from playwright.sync_api import sync_playwright

    require_chromium()
    warehouse = runs[0]
    site = warehouse.parent / "dashboard"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (count,) = query(warehouse, "select count(*) from marts.papers")[0]
    last_run = query(
        warehouse,
        """
        select count(*) filter (where passed), count(*) filter (where not passed and severity = 'ERROR')
        from marts.quality_runs where run_id = (select arg_max(run_id, evaluated_at) from marts.quality_runs)""",
    )[0]
    expected_figures = {
        "papers": count,
        "records": query(warehouse, "select count(*) from marts.paper_sources")[0][0],
        "duplicates": query(warehouse, "select count(*) from marts.duplicate_groups")[0][0],
        "rejected": query(warehouse, "select count(*) from marts.rejected_records")[0][0],
        "terms": query(warehouse, "select count(*) from marts.terms")[0][0],
        "topics": query(warehouse, "select count(*) from marts.topics")[0][0],
        "checks_passed": last_run[0],
        "checks_failed": last_run[1],
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})

        page.goto((site / "index.html").as_uri())
        shown = page.eval_on_selector_all(
            "[data-metric]",
            "els => Object.fromEntries(els.map(e => [e.dataset.metric, e.querySelector('.value').innerText]))",
        )
        assert {k: int(v) for k, v in shown.items()} == expected_figures
        venues = query(
            warehouse,
            "select venue_label, papers, records, duplicates, rejected_records from marts.venue_summary "
            "order by papers desc, venue_label",
        )
        assert [tuple(r[:5]) for r in _cells(page, "venues")] == [tuple(str(v) for v in row) for row in venues]
        page.screenshot(path=ARTIFACTS / "1-overview.png", full_page=True)

        page.get_by_role("link", name="Topics").click()
        topics = query(warehouse, "select topic_id, label, n_papers from marts.topics order by topic_id")
        assert [tuple(r[:3]) for r in _cells(page, "topics")] == [tuple(str(v) for v in row) for row in topics]
        # Both levels: each topic with its subtopics under it.
        tree = page.eval_on_selector_all(
            'table[data-table="topic-tree"] tbody tr[data-topic]',
            "rows => rows.map(r => [Number(r.dataset.topic), Array.from(r.querySelectorAll('li[data-subtopic]'))"
            ".map(li => Number(li.dataset.subtopic))])",
        )
        levels = query(
            warehouse,
            "select t.topic_id, list(sub.topic_id order by sub.topic_id) from marts.topics t"
            " join marts.topics sub on sub.parent_topic_id = t.topic_id where t.level = 1 group by all",
        )
        assert sorted((t, sorted(subs)) for t, subs in tree) == sorted((t, list(subs)) for t, subs in levels)
        assert (
            sum(len(subs) for _, subs in tree)
            == query(warehouse, "select count(*) from marts.topics where level = 2")[0][0]
            > 0
        )
        page.screenshot(path=ARTIFACTS / "2-topics.png", full_page=True)

        page.get_by_role("link", name="Terms").click()
        top_terms = query(
            warehouse,
            "select term, kind, key_papers, doc_freq from marts.terms order by key_papers desc, doc_freq "
            "desc, term limit 30",
        )
        assert [tuple(r[:4]) for r in _cells(page, "terms")] == [tuple(str(v) for v in row) for row in top_terms]
        acronyms = query(
            warehouse,
            "select alias, term, papers from marts.term_aliases where alias_kind = 'acronym' order by "
            "papers desc, alias",
        )
        assert [tuple(r) for r in _cells(page, "acronyms")] == [tuple(str(v) for v in row) for row in acronyms]
        page.screenshot(path=ARTIFACTS / "3-terms.png", full_page=True)

        page.get_by_role("link", name="Duplicates & data quality").click()
        reasons = query(
            warehouse,
            """
            select regexp_replace(reason, ':.*', '') as reason, count(*) as n from marts.rejected_records
            group by 1 order by n desc, reason""",
        )
        assert [tuple(r) for r in _cells(page, "rejections")] == [(reason, str(n)) for reason, n in reasons]
        history = query(
            warehouse,
            "select run_id, count(*), count(*) filter (where passed) from marts.quality_runs group by 1 "
            "order by min(evaluated_at) desc",
        )
        shown_runs = page.eval_on_selector_all(
            'table[data-table="runs"] tbody tr',
            "rows => rows.map(r => [r.dataset.key, r.cells[2].innerText, r.cells[3].innerText])",
        )
        assert shown_runs == [[run, str(n), str(passed)] for run, n, passed in history]
        page.screenshot(path=ARTIFACTS / "4-quality.png", full_page=True)
        browser.close()
