"""A run written while the runs page is open appears on it, and its finished count grows while
the page stays open (no reload)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import anyio

from eviscene.log import EventLog
from eviscene.viewer.server import make_server
from test_live_rows import RUN, _attempt, _start, _write
from viewer_harness import Server


def _write_beside_the_browser(write, *args) -> None:
    """Run the async `write` to its end in a thread of its own (the browser's event loop runs in
    this one); its error, if any, raised here."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(anyio.run, write, *args).result()


def test_a_writing_run_appears_and_its_count_grows_without_a_reload(tmp_path, watched, artifacts):
    # The run is written by the real writer in two sittings, so the page is known to see it
    # part-way (a background `eval` of a few episodes can end between two of the page's looks).
    db = tmp_path / "live.duckdb"
    viewer = Server(db)  # an empty log: no run yet
    try:
        page = watched.page
        page.goto(viewer.url + "/")
        assert page.locator("tr[data-run]").count() == 0
        page.evaluate("() => { window.__sameDocument = true; }")
        log = EventLog(db)
        _write_beside_the_browser(_start, log)  # six episodes scheduled, three finished
        finished = page.locator(f'tr[data-run="{RUN}"] [data-field="episodes_finished"]')
        finished.wait_for(timeout=300_000)
        page.wait_for_function(f"() => document.querySelector('tr[data-run=\"{RUN}\"] [data-field=episodes_finished]').textContent === '3'",
                               timeout=300_000)
        _write_beside_the_browser(_write, log, _attempt(1, 1, 1, "out_of_context") + _attempt(2, 0, 1, "manipulated"))
        page.wait_for_function(f"() => document.querySelector('tr[data-run=\"{RUN}\"] [data-field=episodes_finished]').textContent === '5'",
                               timeout=300_000)
        page.screenshot(path=artifacts / "runs-live.png", full_page=True)
        assert page.evaluate("() => window.__sameDocument") is True  # updated in place, never reloaded
        watched.assert_clean()
    finally:
        viewer.stop()


def test_the_first_look_at_a_live_run_says_computing_then_shows_its_numbers_without_a_click(tmp_path, watched, artifacts):
    """A page that may not wait for a live run's first numbers (a first look at 100k episodes
    takes minutes) says so, with no number, and shows them when they are computed: the runs
    table in place, the dashboard by reloading itself."""
    log = EventLog(tmp_path / "live.duckdb")
    _write_beside_the_browser(_start, log)
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
