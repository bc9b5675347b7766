"""A run started in the background appears on the runs page, and its finished count grows
while the page stays open (no reload)."""

from __future__ import annotations

import threading

import anyio

from eviscene.log import EventLog
from eviscene.viewer.server import make_server
from test_live_rows import RUN, _start
from viewer_harness import RELEASE, Server, start_eval


def test_a_writing_run_appears_and_its_count_grows_without_a_reload(tmp_path, watched, artifacts):
    db = tmp_path / "live.duckdb"
    viewer = Server(db)  # an empty log: no run yet
    run = None
    try:
        page = watched.page
        page.goto(viewer.url + "/")
        assert page.locator("tr[data-run]").count() == 0
        page.evaluate("() => { window.__sameDocument = true; }")
        run = start_eval(db, RELEASE / "runtime_input" / "cases.jsonl", tmp_path / "out",
                         "--limit", "6", "--rollouts-per-case", "1", "--concurrency", "1")
        finished = page.locator('tr[data-run] [data-field="episodes_finished"]')
        finished.wait_for(timeout=300_000)
        seen = int(finished.inner_text())
        page.wait_for_function(
            f"() => Number(document.querySelector('tr[data-run] [data-field=episodes_finished]').textContent) > {seen}",
            timeout=300_000,
        )
        page.screenshot(path=artifacts / "runs-live.png", full_page=True)
        assert page.evaluate("() => window.__sameDocument") is True  # updated in place, never reloaded
        assert run.wait(timeout=600) == 0
        page.wait_for_function("() => document.querySelector('tr[data-run] [data-field=episodes_finished]').textContent === '6'", timeout=60_000)
        watched.assert_clean()
    finally:
        if run is not None and run.poll() is None:
            run.kill()
        viewer.stop()


def test_the_first_look_at_a_live_run_says_computing_then_shows_its_numbers_without_a_click(tmp_path, watched, artifacts):
    """A page that may not wait for a live run's first numbers (a first look at 100k episodes
    takes minutes) says so, with no number, and shows them when they are computed: the runs
    table in place, the dashboard by reloading itself."""
    log = EventLog(tmp_path / "live.duckdb")
    writing = threading.Thread(target=anyio.run, args=(_start, log))  # the browser's event loop runs in this thread
    writing.start()
    writing.join()
    server = make_server(log, "127.0.0.1", 0, first_look_wait_s=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        page = watched.page
        page.goto(url + "/")
        assert "computing…" in page.locator(f'tr[data-run="{RUN}"][data-computing]').inner_text()
        assert page.locator('[data-field="accuracy"]').count() == 0  # no number before it is computed
        page.evaluate("() => { window.__sameDocument = true; }")
        page.wait_for_function("() => document.querySelector('tr[data-run] [data-field=episodes_finished]') !== null")
        assert page.locator('[data-field="episodes_finished"]').inner_text() == "3"  # case 0's two rollouts, case 1's error
        assert page.locator('[data-field="episodes_errored"]').inner_text() == "1"
        assert page.locator('[data-field="accuracy"]').inner_text() == "0.333"  # rollout 0: case 0 right of three cases
        assert page.evaluate("() => window.__sameDocument") is True
        page.goto(f"{url}/run/{RUN}")
        assert page.locator("[data-computing]").count() == 1
        page.wait_for_selector(".chart[data-spec]")  # reloaded by itself
        page.screenshot(path=artifacts / "dashboard-live-first-look.png", full_page=True)
        assert page.locator('[data-stat="episodes_finished"]').inner_text() == "3 / 6"
        watched.assert_clean()
    finally:
        server.shutdown()
        server.server_close()
