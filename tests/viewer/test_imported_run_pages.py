"""An imported run directory in `eviscene view`, in Chromium: its runs row, dashboard, episode
list and episode pages show what its files recorded (the log holds no events of it), each
number worked out by hand from the rows written below."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from eviscene.errors import EvisceneError
from eviscene.imports import import_path
from eviscene.log import EventLog
from eviscene.viewer import data, pages
from eviscene.viewer.report import build_report

from viewer_harness import Server, charts_drawn

IMPORTS_TESTS = Path(__file__).resolve().parent.parent / "imports" / "test_imported_runs.py"
# Rollout 0 of case-A right, of case-B wrong (accuracy 1/2); case-A's rollout 1, completed at
# confidence 0.9, wrong: calibration bins 8 (0.8, all right) and 9 (0.9, all wrong), so the
# expected calibration error is 1/2 · |1 - 0.8| + 1/2 · |0 - 0.9| = 0.55.
METRICS = [
    {"episode_id": "case-A--r000", "case_id": "case-A", "result_correct": True, "hard_trace_audit_pass": True,
     "strict_trace_audit_pass": True},
    {"episode_id": "case-A--r001", "case_id": "case-A", "result_correct": False},
    {"episode_id": "case-B--r000", "case_id": "case-B", "result_correct": False, "hard_trace_audit_pass": True,
     "strict_trace_audit_pass": False,
     "strict_trace_audit_failures": [{"code": "basis_not_shown", "severity": "strict", "detail": "ev-9 was never shown"}]},
]


def _imports_tests():
    spec = importlib.util.spec_from_file_location("imported_runs_tests", IMPORTS_TESTS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _write_seed_run_dir(root: Path) -> Path:
    """tests/imports' hand-written run directory: case-A's rollout 0 wrong, its rollout 1 and case-B's rollout 0 as METRICS."""
    return _imports_tests().write_seed_run_dir(root)


def _seed_run_dir(root: Path) -> Path:
    run = _write_seed_run_dir(root)
    (run / "process_metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in METRICS), encoding="utf-8")
    (run / "traces" / "case-A--r001.json").write_text(
        json.dumps({"image_id": "case-A--r001", "state": {"note": "flood over the old bridge"}}), encoding="utf-8")
    return run


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    base = tmp_path_factory.mktemp("imported-run")
    run_dir = _seed_run_dir(base / "run")
    log = EventLog(base / "log.duckdb")
    run_id = import_path(log, run_dir).import_id
    other = import_path(log, _write_seed_run_dir(base / "other")).import_id
    server = Server(log.path)
    yield server, run_id, run_dir, other
    server.stop()


def test_an_imported_run_lists_its_recorded_accuracy_and_no_rate(imported, watched):
    server, run_id, _, _ = imported
    page = watched.page
    page.goto(server.url + "/")
    row = page.locator(f'tr[data-run="{run_id}"]')
    assert row.locator('[data-field="accuracy"]').inner_text() == "0.500"
    assert row.locator('[data-field="macro_f1"]').inner_text() == "–"  # no gold in the log
    # its last event is its import: no finishing rate made of the time between the run and the import
    assert row.locator('[data-field="rate"]').inner_text() == "–"
    assert row.locator('[data-field="episodes_finished"]').inner_text() == "3"
    watched.assert_clean()


def test_an_imported_run_dashboard_plots_what_its_files_recorded(imported, watched, artifacts):
    server, run_id, run_dir, _ = imported
    page = watched.page
    page.goto(f"{server.url}/run/{run_id}")
    # calibration, terminations, tool calls per episode, duration, reward
    assert charts_drawn(page) == 5
    assert page.locator('[data-stat="accuracy"]').inner_text() == "0.500"
    assert page.locator('[data-stat="macro_f1"]').inner_text() == "–"
    assert page.locator('[data-stat="ece"]').inner_text() == "0.550"
    assert page.locator('[data-stat="majority"]').inner_text() == "–"
    assert page.locator('[data-stat="episodes_finished"]').inner_text() == "3 / 3"
    page.screenshot(path=artifacts / "imported-dashboard.png", full_page=True)
    note = page.locator("[data-imported]").inner_text()
    assert str(run_dir.resolve()) in note and "20261130_141502_offline_offline-react-v1" in note
    watched.assert_clean()


def test_an_imported_run_episode_list_filters_and_searches_its_traces(imported, watched):
    server, run_id, _, _ = imported
    page = watched.page
    base = f"{server.url}/run/{run_id}/episodes"
    page.goto(base)
    assert page.locator('[data-stat="matching"]').first.inner_text() == "3"
    page.goto(f"{base}?filter=result_correct")
    assert page.locator('[data-stat="matching"]').first.inner_text() == "1"
    assert page.locator("table.episodes tbody tr td a").inner_text() == "case-A--r000"
    page.goto(f"{base}?filter=strict_trace_audit_pass+IS+false")
    assert page.locator("table.episodes tbody tr td a").inner_text() == "case-B--r000"
    page.goto(f"{base}?q=old+bridge")  # only in case-A--r001's trace file
    assert page.locator('[data-stat="matching"]').first.inner_text() == "1"
    assert page.locator("table.episodes tbody tr td a").inner_text() == "case-A--r001"
    watched.assert_clean()


def test_an_imported_episode_page_shows_its_recorded_outcome_audit_and_score(imported, watched, artifacts):
    server, run_id, run_dir, _ = imported
    page = watched.page
    page.goto(f"{server.url}/run/{run_id}/episode/case-B--r000")
    assert page.locator("h1").inner_text() == "case-B--r000"
    body = page.locator("body").inner_text()
    assert "basis_not_shown" in body and "ev-9 was never shown" in body  # its process_metrics.jsonl's failure
    assert page.locator('[data-stat="reward"]').inner_text() == "0.000"
    assert f"{run_dir.resolve()}/traces/case-B--r000.json" in body
    page.goto(f"{server.url}/run/{run_id}/episode/case-A--r000")
    judgment = page.locator("div.verdict").inner_text()  # its run_results.jsonl row's verdict and confidence
    assert "manipulated" in judgment and "0.80" in judgment
    page.screenshot(path=artifacts / "imported-episode.png", full_page=True)
    watched.assert_clean()


def test_two_imported_runs_compare_by_their_recorded_correctness(imported, watched):
    server, run_id, _, other = imported
    page = watched.page
    page.goto(f"{server.url}/compare?a={run_id}&b={other}")
    assert page.locator('[data-stat="shared_cases"]').inner_text() == "2"
    # rollout 0: case-A right in this run, wrong in the other; case-B wrong in both
    assert page.locator('[data-stat="flipped"]').inner_text() == "1"
    watched.assert_clean()


def test_the_search_finds_text_an_imported_trace_escapes_in_either_case(tmp_path):
    """A trace written by Python's json escapes what is not ASCII: "Café" is Caf\\u00e9 there, and
    "CAFÉ" CAF\\u00c9. ILIKE folds the escape's hex letters, not the character's case, so a
    search for CAFÉ missed the first and café the second; each letter is matched in either
    case now, mixed cases too, and what JSON escapes in the search (a quote) as it is written."""
    run_dir = _write_seed_run_dir(tmp_path / "run")
    (run_dir / "traces" / "case-A--r000.json").write_text(json.dumps({"image_id": "case-A--r000", "note": "Café au lait"}), encoding="utf-8")
    (run_dir / "traces" / "case-A--r001.json").write_text(json.dumps({"image_id": "case-A--r001", "note": "ÉCOLE CAFÉ"}), encoding="utf-8")
    assert "\\u00c9" in (run_dir / "traces" / "case-A--r001.json").read_text()  # escaped as Python writes it
    (run_dir / "traces" / "case-B--r000.json").write_text(json.dumps({"image_id": "case-B--r000", "note": "Éclair au café", "quote": 'say "Ça va"'}), encoding="utf-8")
    log = EventLog(tmp_path / "log.duckdb")
    run_id = import_path(log, run_dir).import_id
    found = {text: sorted(row["episode_id"] for row in data.episode_list(log, run_id, search=text).rows)
             for text in ("café", "CAFÉ", "Café", "école", "École", "éclair au cafÉ", "ÉCLAIR AU CAFÉ", '"ça VA"')}
    assert found == {"café": ["case-A--r000", "case-A--r001", "case-B--r000"], "CAFÉ": ["case-A--r000", "case-A--r001", "case-B--r000"],
                     "Café": ["case-A--r000", "case-A--r001", "case-B--r000"], "école": ["case-A--r001"], "École": ["case-A--r001"],
                     "éclair au cafÉ": ["case-B--r000"], "ÉCLAIR AU CAFÉ": ["case-B--r000"], '"ça VA"': ["case-B--r000"]}


# ------------------------------------------- numbers no JSON holds, and ranges past a double's

@pytest.fixture(scope="module")
def overflowing(tmp_path_factory):
    """The seed run directory with case-A--r000's `time_taken` 1e999 (past a double: Python's
    json reads it as Infinity; the import refuses it now, an older log holds it) and
    case-A--r001's 1e308; its report and its viewer."""
    base = tmp_path_factory.mktemp("overflowing-run")
    run_dir = _write_seed_run_dir(base / "run")
    results = run_dir / "run_results.jsonl"
    text = results.read_text(encoding="utf-8")
    results.write_text(text.replace('"time_taken": 1.5', '"time_taken": 1e999').replace('"time_taken": 2.0', '"time_taken": 1e308'),
                       encoding="utf-8")
    log = EventLog(base / "log.duckdb")
    run_id = _imports_tests().import_as_older_versions_did(log, run_dir)
    report = base / "report.html"
    build_report(log, run_id, report)
    server = Server(log.path)
    yield log, run_id, report, server
    server.stop()


def test_a_report_holding_a_number_past_a_double_draws_its_plots_and_lists_its_episodes(overflowing, watched):
    """The report embedded the infinite duration as `Infinity` (and the histogram's edges as
    NaN and Infinity), which JSON.parse refuses: no plot was drawn, no episode listed or shown.
    Now it is null, shown as `–`, as `sql --format json` writes it."""
    _, _, report, _ = overflowing
    page = watched.page
    page.goto(report.as_uri())
    watched.assert_clean()
    assert charts_drawn(page) == 5  # calibration, terminations, tool calls per episode, duration, reward
    page.locator("header.top a", has_text="Episodes").click()
    rows = page.locator("#report-list-body tr")
    expect(rows).to_have_count(3, timeout=60_000)
    time_taken = data.EPISODE_LIST_COLUMNS.index("time_taken") + 1
    assert [rows.nth(i).locator(f"td:nth-child({time_taken})").inner_text() for i in range(3)] == ["–", "1e+308", "0.100"]
    rows.first.locator("a").click()
    expect(page.locator("#episode-page h1")).to_have_text("case-A--r000")
    watched.assert_clean()


def test_the_viewer_s_tables_show_a_number_past_a_double_as_a_missing_one(overflowing, watched):
    """The episode list and an episode's outcome table wrote the infinite duration as `inf`
    (`f"{value:.3f}"`); now as a missing value is shown, `–` in a cell of no class, as the
    report's episode list shows it (its JSON holds null)."""
    _, run_id, _, server = overflowing
    page = watched.page
    page.goto(f"{server.url}/run/{run_id}/episodes")
    rows = page.locator("table.episodes tbody tr")
    expect(rows).to_have_count(3)

    def column(name: str) -> list:
        return [rows.nth(i).locator(f"td:nth-child({data.EPISODE_LIST_COLUMNS.index(name) + 1})") for i in range(3)]

    # case-A--r000's duration is Infinity, case-B--r000's 0.1 (case-A--r001's 1e308 is written out in full); rewards 0.25, 0.75, 0.0
    durations = column("time_taken")
    assert [durations[0].inner_text(), durations[2].inner_text()] == ["–", "0.100"]
    assert [durations[0].get_attribute("class"), durations[2].get_attribute("class")] == ["", "num"]
    assert [cell.inner_text() for cell in column("reward")] == ["0.250", "0.750", "0.000"]
    page.locator("a", has_text="case-A--r000").click()
    time_taken = page.locator("table.kv tr", has=page.locator("th", has_text="time taken (s)")).locator("td")
    expect(time_taken).to_have_text("–")
    watched.assert_clean()


def test_a_number_no_json_holds_is_shown_as_a_missing_one_in_every_table_cell():
    """A value reaching a table as NaN or ±Infinity (an older log's imported `1e999`, a query's
    result) showed as `nan`, `inf` or `-inf`; each is shown as None is, in a cell of no class."""
    assert [pages.fmt(v) for v in (math.inf, -math.inf, math.nan, None, 0.5)] == ["–"] * 4 + ["0.500"]
    row = dict.fromkeys(data.EPISODE_LIST_COLUMNS) | {"episode_id": "e", "confidence": math.nan, "time_taken": math.inf,
                                                      "reward": -math.inf, "total_tool_calls": None}
    table = pages.episodes_table("r", data.EpisodePage([row], 1, 1, 50), pages.Links(), predicate="", search="", sort="episode_id",
                                 descending=False)
    cells = re.findall(r"<td[^>]*>.*?</td>", table)
    shown = {column: cells[data.EPISODE_LIST_COLUMNS.index(column)] for column in ("confidence", "time_taken", "reward", "total_tool_calls")}
    assert shown == dict.fromkeys(shown, '<td class="">–</td>')


def test_a_dashboard_with_a_duration_past_a_double_draws_every_plot(overflowing, watched):
    """The duration histogram's bins were `lo + bin * (hi - lo) / bins`: the infinite duration made
    them NaN and Infinity, and 1e308 made `bin * (hi - lo)` overflow, so the page's plots stopped there."""
    _, run_id, _, server = overflowing
    page = watched.page
    page.goto(f"{server.url}/run/{run_id}")
    watched.assert_clean()
    assert charts_drawn(page) == 5
    watched.assert_clean()


def test_a_histogram_bins_the_finite_values_of_a_range_past_a_double(overflowing):
    """Durations 1e999 (read as Infinity: no place on an axis), 1e308 and 0.1: the two finite ones
    in 20 bins of (1e308 - 0.1) / 20 ≈ 5e306 each, the first and the last."""
    log, run_id, _, _ = overflowing
    assert data.dashboard(log, run_id)["histograms"]["duration"] == [
        {"bin": 0, "n": 1, "start": 0.1, "stop": pytest.approx(5e306, rel=1e-12)},
        {"bin": 19, "n": 1, "start": pytest.approx(9.5e307, rel=1e-12), "stop": 1e308},
    ]


def test_a_report_compared_with_a_run_sharing_no_case_is_refused_before_any_episode_is_rendered(tmp_path):
    """The report rendered every episode page (minutes on a large run) and only then learned
    that the two runs share no scored case; it compares them first now."""
    log = EventLog(tmp_path / "log.duckdb")
    run_id = import_path(log, _write_seed_run_dir(tmp_path / "run")).import_id
    other_dir = _write_seed_run_dir(tmp_path / "other")
    for path in other_dir.rglob("*.json*"):  # the same rows about cases other-A and other-B
        path.write_text(path.read_text(encoding="utf-8").replace("case-", "other-"), encoding="utf-8")
    for trace in list((other_dir / "traces").iterdir()):
        trace.rename(trace.with_name(trace.name.replace("case-", "other-")))
    other = import_path(log, other_dir).import_id
    rendered = []
    with pytest.raises(EvisceneError) as refused:
        build_report(log, run_id, tmp_path / "report.html", compare_with=other, progress=lambda done, total: rendered.append(done))
    assert str(refused.value) == f"runs {run_id} and {other} share no scored case"
    assert rendered == [] and not (tmp_path / "report.html").exists()
