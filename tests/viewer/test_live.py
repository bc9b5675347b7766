"""A run started in the background appears on the runs page, and its finished count grows
while the page stays open (no reload)."""

from __future__ import annotations

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
