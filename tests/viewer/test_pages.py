"""Every page of `eviscene view` in Chromium: it loads with no console error and no failed
request, its plots are drawn, its numbers are the views' numbers, its links lead on."""

from __future__ import annotations

from urllib.parse import quote

from eviscene.log import EventLog

from viewer_harness import charts_drawn


def _one(db, sql, params=None):
    return EventLog(db).sql(sql, params).to_pylist()


def test_runs_page_lists_each_run_with_the_views_numbers(server, logs, watched, artifacts):
    page = watched.page
    page.goto(server.url + "/")
    runs = {r["run_id"]: r for r in _one(logs.demo, "SELECT r.*, c.accuracy FROM runs r JOIN (SELECT DISTINCT run_id, accuracy FROM classification_metrics) c USING (run_id)")}
    assert set(runs) == {logs.run_a, logs.run_b}
    for run_id, run in runs.items():
        row = page.locator(f'tr[data-run="{run_id}"]')
        assert row.locator('[data-field="episodes_finished"]').inner_text() == str(run["episodes_finished"])
        assert row.locator('[data-field="episodes_planned"]').inner_text() == str(run["episodes_planned"])
        assert row.locator('[data-field="accuracy"]').inner_text() == f"{run['accuracy']:.3f}"
    assert runs[logs.run_a]["episodes_planned"] == 8 and runs[logs.run_b]["episodes_planned"] == 4  # --limit 4 × rollouts
    page.screenshot(path=artifacts / "runs.png", full_page=True)
    page.locator(f'tr[data-run="{logs.run_a}"] input[name=a]').check()
    page.locator(f'tr[data-run="{logs.run_b}"] input[name=b]').check()
    page.get_by_role("button", name="Compare A and B").click()
    page.wait_for_url("**/compare?**")
    assert page.locator('[data-stat="shared_cases"]').inner_text() == "4"
    page.goto(server.url + "/")
    page.get_by_role("link", name=logs.run_a).click()
    page.wait_for_url(f"**/run/{logs.run_a}")
    watched.assert_clean()


def test_dashboard_draws_every_plot_and_shows_the_views_numbers(server, logs, watched, artifacts):
    page = watched.page
    page.goto(f"{server.url}/run/{logs.run_a}")
    # accuracy/CI, confusion, per-label, calibration, terminations, tool calls, tool latency,
    # model latency, tokens, retries, duration, reward, GRPO, RLOO, policy blocks
    assert charts_drawn(page) >= 14
    metrics = _one(logs.demo, "SELECT DISTINCT accuracy, macro_f1 FROM classification_metrics WHERE run_id = ?", [logs.run_a])[0]
    assert page.locator('[data-stat="accuracy"]').inner_text() == f"{metrics['accuracy']:.3f}"
    assert page.locator('[data-stat="macro_f1"]').inner_text() == f"{metrics['macro_f1']:.3f}"
    # The majority baseline by hand: the commonest gold label's share of the rollout-0 cases.
    gold = [r["label"] for r in _one(logs.demo, "SELECT g.label FROM episodes e JOIN gold_labels g USING (run_id, case_id) WHERE e.run_id = ? AND e.rollout_index = 0", [logs.run_a])]
    assert len(gold) == 4
    assert page.locator('[data-stat="majority"]').inner_text() == f"{max(gold.count(x) for x in gold) / len(gold):.3f}"
    groups = _one(logs.demo, "SELECT count(DISTINCT prompt_group_id) AS n, count(DISTINCT prompt_group_id) FILTER (WHERE is_std_zero) AS z FROM post_rollout_rewards WHERE run_id = ?", [logs.run_a])[0]
    assert page.locator('[data-stat="zero_variance_groups"]').inner_text() == f"{groups['z']} / {groups['n']}"
    page.screenshot(path=artifacts / "dashboard.png", full_page=True)
    page.get_by_role("link", name="Episodes").first.click()
    page.wait_for_url("**/episodes")
    watched.assert_clean()


def test_episodes_page_filters_searches_sorts_and_pages_on_the_server(server, logs, watched, artifacts):
    page = watched.page
    base = f"{server.url}/run/{logs.run_a}/episodes"
    page.goto(base)
    assert page.locator('[data-stat="matching"]').first.inner_text() == "8"
    page.screenshot(path=artifacts / "episodes.png", full_page=True)

    predicate = "total_tool_calls > 3 AND finished"
    expected = _one(logs.demo, "SELECT count(*) AS n FROM episodes WHERE run_id = ? AND total_tool_calls > 3 AND finished", [logs.run_a])[0]["n"]
    page.fill("input[name=filter]", predicate)
    page.get_by_role("button", name="Apply").click()
    page.wait_for_load_state()
    assert page.locator('[data-stat="matching"]').first.inner_text() == str(expected)

    # A join in the predicate: episodes that visited a page.
    page.goto(base + "?filter=" + quote("episode_id IN (SELECT episode_id FROM tool_calls WHERE tool = 'visit')"))
    visited = _one(logs.demo, "SELECT count(DISTINCT episode_id) AS n FROM tool_calls WHERE run_id = ? AND tool = 'visit'", [logs.run_a])[0]["n"]
    assert page.locator('[data-stat="matching"]').first.inner_text() == str(visited)

    # Text search over model messages and tool results.
    word = "hail"
    hits = _one(logs.demo, "SELECT count(DISTINCT episode_id) AS n FROM events WHERE run_id = ? AND type IN ('model.called', 'tool.returned', 'perception.reported', 'judgment.made') AND lower(payload::VARCHAR) LIKE '%hail%'", [logs.run_a])[0]["n"]
    page.goto(base + "?q=" + word)
    assert page.locator('[data-stat="matching"]').first.inner_text() == str(hits)

    # Sorting: by confidence, descending, as SQL orders it.
    page.goto(base + "?sort=confidence&desc=1")
    first = _one(logs.demo, "SELECT episode_id FROM episodes WHERE run_id = ? ORDER BY confidence DESC NULLS LAST, episode_id LIMIT 1", [logs.run_a])[0]
    assert page.locator("table.episodes tbody tr").first.locator("td").first.inner_text() == first["episode_id"]
    page.locator("table.episodes thead a", has_text="reward").click()
    page.wait_for_load_state()
    assert "sort=reward" in page.url

    # Paging: page 2 of 8 episodes at 50 a page is empty; the link to an episode works.
    page.goto(base)
    page.locator("table.episodes tbody tr").first.locator("a").click()
    page.wait_for_url("**/episode/**")
    watched.assert_clean()


def test_episode_page_shows_the_timeline_judgment_and_siblings(server, logs, watched, artifacts):
    page = watched.page
    episode = _one(logs.demo, "SELECT episode_id, verdict_basis::VARCHAR AS basis, prompt_group_id FROM episodes WHERE run_id = ? AND rollout_index = 0 ORDER BY case_id LIMIT 1", [logs.run_a])[0]
    page.goto(f"{server.url}/run/{logs.run_a}/episode/{episode['episode_id']}")
    steps = _one(logs.demo, "SELECT count(*) AS n FROM steps WHERE run_id = ? AND episode_id = ? AND step IS NOT NULL", [logs.run_a, episode["episode_id"]])[0]["n"]
    assert page.locator("ol.timeline > li").count() == steps
    # The case image is really drawn.
    assert page.locator(".case-image img").evaluate("img => img.complete && img.naturalWidth > 0")
    # Every cited evidence id is highlighted in the evidence table.
    import json
    cited = sorted({b["evidence_id"] for b in json.loads(episode["basis"])})
    highlighted = sorted(t.split()[0] for t in page.locator("table tr.cited td:first-child").all_inner_texts())
    assert highlighted == cited
    reward = _one(logs.demo, "SELECT total FROM trajectory_scores WHERE run_id = ? AND episode_id = ?", [logs.run_a, episode["episode_id"]])[0]["total"]
    assert page.locator('[data-stat="reward"]').inner_text() == f"{reward:.3f}"
    assert page.locator(".sibling").count() == 2
    page.screenshot(path=artifacts / "episode.png", full_page=True)
    page.locator(".sibling:not(.current) a").click()
    page.wait_for_url("**/episode/**r001")
    page.locator(".crumbs a", has_text="Episodes").click()
    page.wait_for_url("**/episodes")
    watched.assert_clean()


def test_compare_page_pairs_runs_by_case(server, logs, watched, artifacts):
    page = watched.page
    page.goto(f"{server.url}/compare?a={logs.run_a}&b={logs.run_b}")
    assert charts_drawn(page) >= 2
    # By hand: rollout 0 of each shared case, correct when completed with the gold label.
    rows = _one(logs.demo, """
        SELECT e.run_id, e.case_id, coalesce(e.termination = 'completed' AND e.verdict = g.label, false) AS ok
        FROM episodes e JOIN gold_labels g USING (run_id, case_id) WHERE e.rollout_index = 0""")
    a = {r["case_id"]: r["ok"] for r in rows if r["run_id"] == logs.run_a}
    b = {r["case_id"]: r["ok"] for r in rows if r["run_id"] == logs.run_b}
    shared = sorted(set(a) & set(b))
    assert page.locator('[data-stat="accuracy_a"]').inner_text() == f"{sum(a[c] for c in shared) / len(shared):.3f}"
    assert page.locator('[data-stat="accuracy_b"]').inner_text() == f"{sum(b[c] for c in shared) / len(shared):.3f}"
    assert page.locator('[data-stat="flipped"]').inner_text() == str(sum(a[c] != b[c] for c in shared))
    page.screenshot(path=artifacts / "compare.png", full_page=True)
    page.get_by_role("link", name=logs.run_b).click()
    page.wait_for_url(f"**/run/{logs.run_b}")
    watched.assert_clean()


def test_compare_page_says_its_tables_are_whole_runs_where_the_runs_ran_other_cases():
    """The headline pairs the cases both runs ran; the per-label and tool tables are each run's
    own figures, which read as deltas on those cases when a run ran 28 cases and the other 2."""
    from eviscene.analysis.compare import RunComparison
    from eviscene.viewer.pages import Links, compare_page

    cases = [{"case_id": c, "label": "authentic", "verdict_a": "authentic", "verdict_b": "authentic", "correct_a": True, "correct_b": True}
             for c in ("c1", "c2")]
    result = RunComparison("a", "b", cases, 1.0, 1.0, 0.0, 0.0, 0.0, 0, 0)
    note = "Each run over all its own cases (A 28, B 2), not only the 2 both ran."
    page = compare_page({"result": result, "labels": [], "tools": [], "flipped": [], "cases": {"a": 28, "b": 2}}, Links())
    assert page.count(note) == 2  # above each of the two tables
    same = compare_page({"result": result, "labels": [], "tools": [], "flipped": [], "cases": {"a": 2, "b": 2}}, Links())
    assert "Each run over all its own cases" not in same
