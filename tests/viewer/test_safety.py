"""Hostile content renders as text, the filter box takes only a read-only predicate, the
server binds loopback by default and refuses to change anything."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from urllib.parse import quote

import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.log import EventLog
from eviscene.viewer.predicate import PredicateError, validate_predicate
from eviscene.viewer.server import host_name

from viewer_harness import HOSTILE, Server

REFUSED = [
    "true; DROP TABLE events",
    "true) UNION ALL SELECT * FROM episodes WHERE (true",
    "true) ORDER BY (1",
    "true) LIMIT (1",
    "episode_id IN (SELECT content FROM read_text('/etc/passwd'))",
    "episode_id IN (SELECT * FROM read_csv('/etc/passwd'))",
    "true -- ",
    "true /*",
    "COPY events TO '/tmp/x.csv'",
    "ATTACH '/tmp/x.duckdb' AS x",
]


@pytest.mark.parametrize("predicate", REFUSED)
def test_only_a_read_only_predicate_passes_the_filter_check(predicate):
    with pytest.raises(PredicateError):
        validate_predicate(predicate)


def test_predicates_over_the_columns_and_the_views_pass():
    for predicate in ("verdict <> gold_label AND total_tool_calls > 5", "confidence BETWEEN 0.2 AND 0.9 OR reward IS NULL",
                      "episode_id IN (SELECT episode_id FROM tool_calls WHERE tool = 'visit')", "case_id LIKE 'demo-%'"):
        assert validate_predicate(predicate) == predicate


def test_the_filter_box_refuses_anything_but_a_predicate(server, logs, watched):
    page = watched.page
    before = EventLog(logs.demo).sql("SELECT count(*) AS n FROM events").to_pylist()[0]["n"]
    for predicate in REFUSED[:6]:
        page.goto(f"{server.url}/run/{logs.run_a}/episodes?filter={quote(predicate)}")
        assert page.get_by_role("alert").inner_text().startswith("Refused:"), predicate
        assert page.locator("table.episodes").count() == 0
    assert EventLog(logs.demo).sql("SELECT count(*) AS n FROM events").to_pylist()[0]["n"] == before
    watched.assert_clean()


def test_markup_in_titles_captions_and_tool_output_renders_as_text(logs, watched, artifacts):
    hostile = Server(logs.hostile)
    try:
        page = watched.page
        episode = EventLog(logs.hostile).sql("SELECT episode_id FROM episodes ORDER BY episode_id LIMIT 1").to_pylist()[0]["episode_id"]
        urls = ["/", f"/run/{logs.hostile_run}", f"/run/{logs.hostile_run}/episodes?q=" + quote("<script>"),
                f"/run/{logs.hostile_run}/episode/{episode}"]
        for url in urls:
            page.goto(hostile.url + url)
            page.wait_for_load_state("networkidle")
            assert page.evaluate("() => window.__pwned") is None, url
        # The episode page shows the markup as text: in evidence titles, captions and observations.
        text = page.locator("main").inner_text()
        assert HOSTILE in text
        assert page.locator("main script").count() == 0
        assert page.locator("main img[src=x]").count() == 0
        page.screenshot(path=artifacts / "hostile-episode.png", full_page=True)
        watched.assert_clean()
    finally:
        hostile.stop()


def test_the_server_binds_loopback_and_is_read_only(server):
    assert server.url.startswith("http://127.0.0.1:")
    request = urllib.request.Request(server.url + "/", data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 405
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(server.url + "/static/../../pyproject.toml", timeout=30)
    assert missing.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as unknown:
        urllib.request.urlopen(server.url + "/image/x/" + "0" * 64, timeout=30)
    assert unknown.value.code == 404


def test_a_loopback_viewer_refuses_other_host_names(server):
    """DNS rebinding: a page of evil.example re-pointed at 127.0.0.1 sends Host: evil.example."""
    port = server.url.rpartition(":")[2]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        request = urllib.request.Request(server.url + "/", headers={"Host": host})
        with urllib.request.urlopen(request, timeout=30) as answered:
            assert answered.status == 200
    request = urllib.request.Request(server.url + "/", headers={"Host": f"evil.example:{port}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 403
    assert refused.value.read().decode() == (
        "Host 'evil.example' refused: a viewer bound to loopback answers to localhost, 127.0.0.1 and ::1 only\n"
    )


@pytest.mark.parametrize("header, name", [("127.0.0.1:8765", "127.0.0.1"), ("[::1]:8765", "::1"), ("localhost", "localhost"), ("::1", "::1")])
def test_host_names_are_read_without_their_port(header, name):
    assert host_name(header) == name


@pytest.mark.parametrize("port", ["65536", "-1"])
def test_a_port_outside_the_tcp_range_is_a_usage_error_not_a_traceback(tmp_path, port):
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "view", "--port", port])
    assert result.exit_code == 2 and not isinstance(result.exception, OverflowError)
    assert f"Invalid value for '--port': {port} is not in the range 0<=x<=65535." in result.output


def test_a_port_in_use_is_one_line_naming_the_way_past_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "view", "--port", str(port)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}: ")
    assert result.stderr.endswith("; choose another --port (0: any free port)\n")
