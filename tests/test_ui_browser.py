"""The Dagster UI in a real browser: open the graph, Materialize all, watch the run and its checks pass.

Drives Debian's chromium through Playwright (browsers that Playwright downloads itself are not
available here); `.ci/run` installs chromium. Screenshots land in test-artifacts/ui/.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from browser import CHROMIUM, CHROMIUM_ARGS, free_loopback_port, require_chromium
from corpus import REPO, SEEDS

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ARTIFACTS = REPO / "test-artifacts" / "ui"


def _wait_for(url: str, timeout: float) -> None:
    """Until ``url`` answers 200, asked every 0.1 s; ``timeout``: a safety net."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """`paperhouse ui` on a free port, with its own instance, seeds copy and warehouse."""
    require_chromium()
    root = tmp_path_factory.mktemp("ui")
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(REPO / "dagster.yaml")
    shutil.copytree(SEEDS, root / "seeds")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "PAPERHOUSE_SEEDS_DIR": str(root / "seeds"),
        "PAPERHOUSE_WAREHOUSE": str(root / "warehouse.duckdb"),
    }
    port = free_loopback_port()
    with open(root / "ui.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "paperhouse.cli", "ui", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_for(f"http://127.0.0.1:{port}/server_info", timeout=600)
            yield f"http://127.0.0.1:{port}", root
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def test_materialize_all_from_the_ui(ui):
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
    from playwright.sync_api import expect, sync_playwright

    base, root = ui
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{base}/asset-groups")
        skip = page.get_by_role("button", name="Skip")
        with contextlib.suppress(PlaywrightTimeoutError):
            skip.click(timeout=10_000)  # the community sign-up dialog of a new instance
        materialize = page.get_by_role("button", name="Materialize all")
        expect(materialize).to_be_enabled(timeout=60_000)
        page.screenshot(path=ARTIFACTS / "1-asset-graph.png")
        materialize.click()
        expect(page.get_by_text("Launched run")).to_be_visible(timeout=60_000)

        page.goto(f"{base}/runs")  # the runs page refreshes itself
        finished = page.get_by_text("Success", exact=True).or_(page.get_by_text("Failure", exact=True))
        expect(finished.first).to_be_visible(timeout=420_000)
        page.screenshot(path=ARTIFACTS / "2-run-finished.png")
        assert page.get_by_text("Failure", exact=True).count() == 0, "the run failed"

        page.goto(f"{base}/assets/marts/papers?view=checks")
        expect(page.get_by_text("great_expectations_papers").first).to_be_visible(timeout=60_000)
        expect(page.get_by_text("This is a blocking asset check")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("Passed", exact=True).first).to_be_visible(timeout=60_000)
        page.screenshot(path=ARTIFACTS / "3-checks-passed.png")
        browser.close()
    assert (root / "warehouse.duckdb").exists()  # the UI's run published the warehouse
