"""An imported run directory in `eviscene view`, in Chromium: its runs row, dashboard, episode
list and episode pages show what its files recorded (the log holds no events of it), each
number worked out by hand from the rows written below."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from eviscene.imports import import_path
from eviscene.log import EventLog

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


def _write_seed_run_dir(root: Path) -> Path:
    """tests/imports' hand-written run directory: case-A's rollout 0 wrong, its rollout 1 and case-B's rollout 0 as METRICS."""
    spec = importlib.util.spec_from_file_location("imported_runs_tests", IMPORTS_TESTS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.write_seed_run_dir(root)


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
    from eviscene.viewer import data

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
