"""The dashboard's dataset-export plots and the episode page's dataset fate, after a real
`eviscene dataset export` of the run (on a copy of the log, so other tests see none)."""

from __future__ import annotations

import json
import shutil

from eviscene.log import EventLog

from viewer_harness import Server, charts_drawn, eviscene


def test_the_latest_dataset_export_is_plotted_and_each_episode_shows_its_fate(logs, tmp_path, watched, artifacts):
    db = tmp_path / "exported.duckdb"
    shutil.copy(logs.demo, db)
    if logs.demo.with_name(logs.demo.name + ".live").exists():
        shutil.copytree(logs.demo.with_name(logs.demo.name + ".live"), db.with_name(db.name + ".live"))
    eviscene(db, "dataset", "export", "--run", logs.run_a, "--out", str(tmp_path / "dataset"))
    manifest = json.loads((tmp_path / "dataset" / "manifest.json").read_text(encoding="utf-8"))
    viewer = Server(db)
    try:
        page = watched.page
        page.goto(f"{viewer.url}/run/{logs.run_a}")
        charts_drawn(page)
        card = page.locator("figure", has_text="Latest dataset export")
        assert card.count() == 1
        spec = json.loads(page.locator(f"#{card.locator('.chart').get_attribute('data-spec')}").text_content())
        plotted = {row["outcome"]: row["episodes"] for row in spec["data"]["values"]}
        assert plotted["accepted"] == manifest["accepted_episode_count"]
        assert sum(plotted.values()) == manifest["candidate_episode_count"]
        page.screenshot(path=artifacts / "dashboard-dataset.png", full_page=True)

        # The bundled release is a development subset: training is prohibited, nothing is accepted.
        assert manifest["accepted_episode_count"] == 0 and manifest["excluded_episode_count"] == 8
        episode_id = EventLog(db).sql("SELECT episode_id FROM episodes WHERE run_id = ? ORDER BY episode_id LIMIT 1", [logs.run_a]).to_pylist()[0]["episode_id"]
        page.goto(f"{viewer.url}/run/{logs.run_a}/episode/{episode_id}")
        fate = page.locator("section.card", has_text="Dataset fate")
        assert fate.locator("tr", has_text="accepted").locator("td").inner_text() == "no"
        assert fate.locator("tr", has_text="excluded because").locator("td").inner_text() not in ("", "–")
        watched.assert_clean()
    finally:
        viewer.stop()
