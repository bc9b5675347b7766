"""`eviscene report`: one self-contained HTML file that opens from disk with the network off,
draws its plots, lists the episodes and shows any episode page on demand."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil

import pytest
from playwright.sync_api import expect

from eviscene.exports import serialize
from eviscene.log import EventLog
from eviscene.viewer.report import build_report

from viewer_harness import RELEASE, charts_drawn, eviscene, run_ids, start_eval


@pytest.fixture(scope="module")
def report(logs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    done = eviscene(logs.demo, "report", logs.run_a, "--compare", logs.run_b, "--out", str(out))
    assert f"wrote {out}: 8 episodes" in done.stdout
    assert "rendering episodes" in done.stderr  # the progress bar
    return out


def test_the_report_references_nothing_on_a_network(report):
    text = report.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", text, re.I)
    assert not re.search(r"""url\(\s*["']?\s*(?:https?:)?//""", text, re.I)
    assert not re.search(r"""@import""", text)


def test_the_report_renders_offline_from_disk(report, logs, browser, artifacts):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, offline=True)
    context.set_default_timeout(180_000)
    requests, problems = [], []
    context.route("**/*", lambda route: (requests.append(route.request.url), route.continue_() if route.request.url.startswith(("file:", "data:")) else route.abort()))
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto(report.as_uri())
        assert charts_drawn(page) >= 14
        metrics = EventLog(logs.demo).sql("SELECT DISTINCT accuracy FROM classification_metrics WHERE run_id = ?", [logs.run_a]).to_pylist()[0]
        assert page.locator('section[data-route=dashboard] [data-stat="accuracy"]').inner_text() == f"{metrics['accuracy']:.3f}"
        page.screenshot(path=artifacts / "report-dashboard.png", full_page=True)

        # The list is drawn by the hashchange handler, after the click returns: wait for it.
        page.locator("header.top a", has_text="Episodes").click()
        rows = page.locator("#report-list-body tr")
        expect(rows).to_have_count(8, timeout=60_000)
        page.fill("#report-search", "r001")
        expect(rows).to_have_count(4, timeout=60_000)
        page.fill("#report-search", "")
        page.screenshot(path=artifacts / "report-episodes.png", full_page=True)

        first = rows.first.locator("a")
        episode_id = first.inner_text()
        first.click()
        page.locator("#episode-page h1").wait_for()
        assert page.locator("#episode-page h1").inner_text() == episode_id
        assert page.locator("#episode-page .case-image img").evaluate("img => img.complete && img.naturalWidth > 0")
        steps = EventLog(logs.demo).sql("SELECT count(*) AS n FROM steps WHERE run_id = ? AND episode_id = ? AND step IS NOT NULL", [logs.run_a, episode_id]).to_pylist()[0]["n"]
        assert page.locator("#episode-page ol.timeline > li").count() == steps
        page.screenshot(path=artifacts / "report-episode.png", full_page=True)
        # Only the one episode page is in the DOM.
        assert page.locator("ol.timeline").count() == 1

        page.locator("header.top a", has_text="Compare").click()
        expect(page.locator("section[data-route=compare]")).to_be_visible(timeout=60_000)
        assert charts_drawn(page) >= 2
        # The compare page's own plots (its chart ids once shared the dashboard's, which were drawn instead).
        assert "F1 by label" in page.locator("section[data-route=compare] .chart").first.inner_text()
        page.screenshot(path=artifacts / "report-compare.png", full_page=True)
        # Hashes no episode has, or no selector takes, are no script error.
        for hash_ in ("#episode/constructor", "#episode/__proto__", '#"]x'):
            page.evaluate(f"location.hash = {hash_!r}")
            page.wait_for_timeout(200)
        expect(page.locator("#episode-page")).to_have_text('No episode __proto__ in this report.')
        assert not problems, problems
        assert all(url.startswith(("file:", "data:")) for url in requests), requests
    finally:
        context.close()


def test_every_element_id_of_a_report_is_its_own(report):
    ids = re.findall(r'\sid="([^"]+)"', report.read_text(encoding="utf-8"))
    assert ids and len(ids) == len(set(ids)), sorted(i for i in set(ids) if ids.count(i) > 1)


def test_a_report_is_byte_identical_on_rerun(report, logs, tmp_path):
    again = tmp_path / "again.html"
    eviscene(logs.demo, "report", logs.run_a, "--compare", logs.run_b, "--out", str(again))
    assert again.read_bytes() == report.read_bytes()


def test_a_run_over_a_picture_cut_short_gets_its_report(tmp_path):
    """The run reads a case picture without its last two thirds as far as it goes; the report
    decoded it strictly for its thumbnail and stopped (`image file is truncated`), no file written.
    Now its thumbnail is what the agent saw."""
    release = tmp_path / "release"
    shutil.copytree(RELEASE, release)
    cases = release / "runtime_input" / "cases.jsonl"
    rows = [json.loads(line) for line in cases.read_text(encoding="utf-8").splitlines() if line.strip()]
    picture = release / rows[0]["image_path"]
    picture.write_bytes(picture.read_bytes()[: picture.stat().st_size // 3])
    rows[0]["image_sha256"] = hashlib.sha256(picture.read_bytes()).hexdigest()
    cases.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    log = tmp_path / "log.duckdb"
    done = start_eval(log, cases, tmp_path / "run", "--case-id", rows[0]["case_id"], "--no-progress")
    assert done.wait(timeout=900) == 0, done.stderr.read()
    out = tmp_path / "report.html"
    eviscene(log, "report", run_ids(log)[0], "--out", str(out))
    assert out.read_text(encoding="utf-8").count("data:image/jpeg;base64,") >= 1


def test_an_unknown_run_is_one_line_and_exit_2(logs, tmp_path):
    done = eviscene(logs.demo, "report", "no-such-run", "--out", str(tmp_path / "x.html"), check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"Error: no run 'no-such-run' in {logs.demo}; `eviscene --db {logs.demo} runs` lists the runs"]


def test_a_mistyped_run_is_answered_with_the_closest_run(logs, tmp_path):
    done = eviscene(logs.demo, "report", logs.run_a + "x", "--out", str(tmp_path / "x.html"), check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: no run '{logs.run_a}x' in {logs.demo} (did you mean '{logs.run_a}'?); `eviscene --db {logs.demo} runs` lists the runs"]


def test_an_unknown_run_to_compare_with_is_refused_before_any_episode_is_rendered(logs, tmp_path):
    out = tmp_path / "x.html"
    done = eviscene(logs.demo, "report", logs.run_a, "--compare", "no-such-run", "--out", str(out), check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"Error: no run 'no-such-run' in {logs.demo}; `eviscene --db {logs.demo} runs` lists the runs"]
    assert not out.exists()


def test_an_out_in_a_folder_that_is_not_there_is_refused_before_any_episode_is_rendered(logs, tmp_path):
    out = tmp_path / "no-such-folder" / "x.html"
    done = eviscene(logs.demo, "report", logs.run_a, "--out", str(out), check=False)
    assert (done.returncode, done.stderr) == (2, f"Error: --out {out}: no folder {out.parent}\n")


def test_an_interrupted_report_leaves_the_earlier_file_whole(logs, tmp_path, monkeypatch):
    """The HTML is written under a temporary name and renamed: a report stopped before the
    rename (Ctrl-C, a full disk) leaves the earlier report byte for byte, and nothing beside it."""
    out = tmp_path / "report.html"
    out.write_text("the earlier report")

    def interrupted(source, target):
        raise KeyboardInterrupt

    monkeypatch.setattr(serialize.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_report(EventLog(logs.demo), logs.run_a, out)
    assert out.read_text() == "the earlier report"
    assert os.listdir(tmp_path) == ["report.html"]
