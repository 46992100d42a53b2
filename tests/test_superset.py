"""Apache Superset on the warehouse, as a user meets it: `paperhouse superset` (what `make superset`
runs) on a warehouse of the bundled seeds, on a free loopback port, with its own virtualenv made
once and kept between test runs (.superset-venv). Every chart of the shipped dashboards answers
through Superset's API with the rows `paperhouse query` gives for the same SQL, every dashboard
renders every chart in headless Chromium, and a run on a changed folder shows without a restart.
"""

import json
import math
import os
import secrets
import shutil
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
import yaml
from browser import CHROMIUM, CHROMIUM_ARGS, free_loopback_port, require_chromium
from corpus import REPO, SEEDS, seed_abstracts
from warehouses import paperhouse

from paperhouse.bi import bundle
from paperhouse.bi.api import SupersetClient
from paperhouse.settings import variable

pytestmark = [pytest.mark.slow, pytest.mark.browser]

VENV = REPO / ".superset-venv"  # made once (about a minute), reused by every later test run
ARTIFACTS = REPO / "test-artifacts" / "superset"
NEW_LIST_VENUE = "NeurIPS 2025"


@pytest.fixture(scope="module")
def superset(seeds_build, tmp_path_factory):
    """`paperhouse superset` on a copy of the suite's `paperhouse run` of the bundled seeds (its
    warehouse, Parquet and build folder: the last test runs again on a changed folder)."""
    root = tmp_path_factory.mktemp("superset")
    seeds = root / "seeds"
    shutil.copytree(SEEDS, seeds)
    warehouse = root / "data" / "paperhouse.duckdb"
    shutil.copytree(seeds_build.warehouse.parent, warehouse.parent, symlinks=True)
    port = free_loopback_port()
    env = os.environ | {
        variable("superset_venv"): str(VENV),
        variable("superset_port"): str(port),
        variable("superset_user"): "analyst",
        variable("superset_password"): secrets.token_urlsafe(12),
        variable("warehouse"): str(warehouse),
        variable("seeds_dir"): str(seeds),
    }
    served = paperhouse("superset", env=env)
    try:
        assert served.returncode == 0, served.stdout[-3000:] + served.stderr[-3000:]
        client = SupersetClient(f"http://127.0.0.1:{port}", "analyst", env[variable("superset_password")])
        yield SimpleNamespace(
            port=port, warehouse=warehouse, seeds=seeds, env=env, client=client, output=served.stdout, root=root
        )
    finally:
        stopped = paperhouse("superset", "--stop", env=env)
        assert stopped.returncode == 0 and "stopped" in stopped.stdout


def _shipped(kind: str) -> dict[str, dict]:
    """The bundle's charts or dashboards by uuid."""
    return {
        config["uuid"]: config
        for config in (yaml.safe_load(path.read_text()) for path in (bundle.bundle_folder() / kind).glob("*.yaml"))
    }


def _charts(client: SupersetClient) -> dict[str, dict]:
    """Superset's charts of the bundle, by uuid, with their ids."""
    shipped = _shipped("charts")
    found = {}
    for chart in client.listed("chart"):
        detail = client.request("GET", f"/api/v1/chart/{chart['id']}")["result"]
        if detail.get("uuid") in shipped:
            found[detail["uuid"]] = {"id": chart["id"], "name": chart["slice_name"]}
    return found


def test_it_serves_the_five_dashboards_and_a_dataset_for_every_mart(superset):
    dashboards = {d["dashboard_title"]: d for d in superset.client.listed("dashboard")}
    expected = {f"paperhouse: {name}" for name in ("Overview", "Topics", "Terms", "Trends", "Data quality")}
    assert expected <= set(dashboards)
    assert {config["dashboard_title"] for config in _shipped("dashboards").values()} == expected
    datasets = {d["table_name"] for d in superset.client.listed("dataset") if d.get("schema") == "marts"}
    assert set(bundle.mart_tables(superset.warehouse)) <= datasets
    assert f"http://127.0.0.1:{superset.port}/superset/dashboard/paperhouse-overview/" in superset.output
    # The warehouse is registered read-only, at this warehouse's path.
    database = next(d for d in superset.client.listed("database") if d["database_name"] == "paperhouse")
    uri = superset.client.request("GET", f"/api/v1/database/{database['id']}/connection")["result"]["sqlalchemy_uri"]
    assert uri == f"duckdb:///{superset.warehouse.resolve()}?access_mode=READ_ONLY"
    # Every shipped chart was imported and is on a dashboard.
    assert set(_charts(superset.client)) == set(_shipped("charts"))
    on_dashboards = {
        component["meta"]["uuid"]
        for config in _shipped("dashboards").values()
        for component in config["position"].values()
        if isinstance(component, dict) and component.get("type") == "CHART"
    }
    assert on_dashboards == set(_shipped("charts"))


def _same(from_superset, from_query) -> bool:
    """A value as Superset's API gives it (a timestamp in epoch milliseconds) against `paperhouse query`'s."""
    if isinstance(from_superset, (int, float)) and isinstance(from_query, str):
        moment = datetime.fromisoformat(from_query).replace(tzinfo=UTC)
        return math.isclose(from_superset, moment.timestamp() * 1000, abs_tol=1)
    if isinstance(from_superset, float) or isinstance(from_query, float):
        return math.isclose(from_superset, from_query, rel_tol=1e-9, abs_tol=1e-12)
    return from_superset == from_query


def _rows_agree(chart_rows: list[dict], query_rows: list[dict]) -> bool:
    """The same rows, in any order (rows a query's ORDER BY ties may come either way)."""
    ordered = [
        sorted(rows, key=lambda row: json.dumps(row, sort_keys=True, default=str)) for rows in (chart_rows, query_rows)
    ]
    return len(chart_rows) == len(query_rows) and all(
        row.keys() == other.keys() and all(_same(row[key], other[key]) for key in row)
        for row, other in zip(*ordered, strict=True)
    )


def chart_rows(superset) -> dict[str, list[dict]]:
    """Every chart's rows through Superset's API, checked against the same SQL through `paperhouse query`."""
    answered = {}
    for chart in _charts(superset.client).values():
        result = superset.client.chart_data(chart["id"])
        assert result.get("status") == "success" and not result.get("error"), (chart["name"], result.get("error"))
        query = paperhouse("query", result["query"], "--format", "json", env=superset.env)
        assert query.returncode == 0, (chart["name"], query.stderr[-2000:])
        assert _rows_agree(result["data"], json.loads(query.stdout)), chart["name"]
        answered[chart["name"]] = result["data"]
    return answered


def test_every_chart_answers_with_the_rows_the_same_query_gives(superset):
    answered = chart_rows(superset)
    assert len(answered) == len(_shipped("charts"))
    assert answered["Papers per list"] == [{"venue_label": "ICLR 2026", "papers": len(seed_abstracts())}]
    assert answered["Checks per run"] and all(row["failed"] == 0 for row in answered["Checks per run"])
    # Charts over marts the seeds leave empty answer with no rows, not an error.
    assert answered["Rejected records by reason"] == []


def _render(page, base: str, slug: str) -> dict:
    """Open a dashboard and wait until every chart has its data; what each chart holder shows."""
    delivered: dict[int, dict] = {}

    def on_response(response) -> None:
        if "/api/v1/chart/data" in response.url and response.request.method == "POST" and response.ok:
            form = json.loads(response.request.post_data)["form_data"]
            result = response.json()["result"][0]
            # A bar or line chart's query pivots its series into columns beside the x axis (the
            # first): its points are the values there.
            points = sum(v is not None for row in result["data"] for k, v in row.items() if k != result["colnames"][0])
            delivered[form["slice_id"]] = {"rows": result["rowcount"], "points": points}

    page.on("response", on_response)
    page.goto(f"{base}/superset/dashboard/{slug}/")
    page.wait_for_selector(".dashboard-component-chart-holder", timeout=120_000)
    page.wait_for_load_state("networkidle", timeout=120_000)
    holders = page.query_selector_all(".dashboard-component-chart-holder")
    page.wait_for_function(  # each chart drew itself: a canvas, a table, or the empty-result notice
        "n => document.querySelectorAll('.dashboard-component-chart-holder canvas, "
        ".dashboard-component-chart-holder table, .dashboard-component-chart-holder .ant-empty, "
        ".dashboard-component-chart-holder [role=alert]').length >= n",
        arg=len(holders),
        timeout=120_000,
    )
    page.remove_listener("response", on_response)
    shown = []
    for holder in page.query_selector_all(".dashboard-component-chart-holder"):
        shown.append(
            {
                "title": holder.query_selector(".header-title, [data-test='editable-title']").inner_text().strip(),
                "errors": [e.inner_text() for e in holder.query_selector_all("[role=alert], .alert-danger")],
                "canvas": len(holder.query_selector_all("canvas")),
                "table_rows": len(holder.query_selector_all("table tbody tr")),
                "empty": bool(holder.query_selector(".ant-empty, [class*='EmptyState']"))
                or "No results" in holder.inner_text(),
            }
        )
    return {"charts": shown, "delivered": delivered}


def test_every_dashboard_renders_every_chart_in_a_browser(superset):
    require_chromium()
    from playwright.sync_api import sync_playwright

    expected = chart_rows(superset)
    ids = {chart["name"]: chart["id"] for chart in _charts(superset.client).values()}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    base = f"http://127.0.0.1:{superset.port}"
    seen = set()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 2400})
            page.goto(f"{base}/login/")
            page.fill("#username", "analyst")
            page.fill("#password", superset.env[variable("superset_password")])
            page.keyboard.press("Enter")
            page.wait_for_url("**/superset/welcome/**", timeout=120_000)
            for config in _shipped("dashboards").values():
                rendered = _render(page, base, config["slug"])
                page.screenshot(path=str(ARTIFACTS / f"{config['slug']}.png"), full_page=True)
                for chart in rendered["charts"]:
                    name, rows = chart["title"], expected[chart["title"]]
                    seen.add(name)
                    assert not chart["errors"], (name, chart["errors"])
                    delivered = rendered["delivered"][ids[name]]
                    if not rows:
                        assert chart["empty"] and delivered["rows"] == 0, name
                    elif chart["canvas"]:  # a bar or point for each of the API's rows
                        assert delivered["points"] == len(rows) and chart["table_rows"] == 0, name
                    else:  # a table row for each
                        assert delivered["rows"] == chart["table_rows"] == len(rows), name
        finally:
            browser.close()
    assert seen == set(expected)


def test_a_run_on_a_changed_folder_shows_without_a_restart(superset):
    """A run swaps a new warehouse file in while Superset keeps its read-only connection's settings:
    the charts read the new version at once (this test runs last: it changes the module's folder)."""
    pid = (superset.warehouse.parent / "superset" / "server.pid").read_text()
    abstracts = seed_abstracts()
    new_paper = (
        "Tabular foundation models promise zero-shot prediction on unseen tables, yet their attention over rows "
        "scales quadratically. We introduce a sketching layer that summarises rows into prototypes."
    )
    (superset.seeds / "neurips.txt").write_text(f"{NEW_LIST_VENUE} Papers\n\n{abstracts[3]}\n\n{new_paper}\n")
    rerun = paperhouse("run", env=superset.env)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    answered = chart_rows(superset)
    assert {row["venue_label"] for row in answered["Papers per list"]} == {"ICLR 2026", NEW_LIST_VENUE}
    lists = {row["venue_label"]: row for row in answered["Records, duplicates and rejections per list"]}
    assert lists[NEW_LIST_VENUE]["records"] == 2 and lists["ICLR 2026"]["records"] == len(abstracts)
    assert len(answered["Checks per run"]) == 2
    assert (superset.warehouse.parent / "superset" / "server.pid").read_text() == pid
