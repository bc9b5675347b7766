"""Hostile content renders as text, the filter box takes only a read-only predicate and
answers within its time limit, the server binds loopback by default, answers no other site's
page and refuses to change anything."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.events import EpisodeFinished, EpisodeScheduled, EpisodeStarted, JudgmentMade, RunStarted
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.viewer import predicate as predicate_module
from eviscene.viewer.predicate import PredicateError, validate_predicate
from eviscene.viewer import server as server_module
from eviscene.viewer.server import allowed_host_names, host_name, make_server

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


@pytest.mark.parametrize("predicate, refusal", [
    ("current_setting('temp_directory') IS NOT NULL", "the filter may read the views, not settings, variables or catalogs (current_setting)"),
    ("getvariable('x') IS NULL", "the filter may read the views, not settings, variables or catalogs (getvariable)"),
    ("current_schemas(true)::VARCHAR LIKE '%main%'", "the filter may read the views, not settings, variables or catalogs (current_schemas)"),
    ("in_search_path('archive', 'main')", "the filter may read the views, not settings, variables or catalogs (in_search_path)"),
    ("has_table_privilege('events', 'select')", "the filter may read the views, not settings, variables or catalogs (has_table_privilege)"),
    ("pg_sleep(60) IS NULL", "the filter may read the views, not settings, variables or catalogs (pg_sleep)"),
    ("(SELECT count(*) FROM (SHOW ALL TABLES) WHERE database = 'archive') > 0",
     "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("EXISTS (FROM (DESCRIBE archive.events))", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("(SUMMARIZE events) IS NULL", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("episode_id IN (SELECT database_name FROM duckdb_databases)", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("EXISTS (SELECT * FROM main.DuckDB_Settings)", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("EXISTS (SELECT * FROM information_schema.tables)", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("EXISTS (SELECT * FROM pg_catalog.pg_class)", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("EXISTS (SELECT * FROM pg_settings)", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    # the log's path, read from a catalog view no prefix names
    ("(SELECT count(*) FROM pragma_database_list WHERE file LIKE '/tmp%') > 0",
     "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("EXISTS (SELECT * FROM system.main.Sqlite_Master)", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
    ("EXISTS (SELECT * FROM duckdb_extensions)", "the filter may read the views, not DuckDB's catalogs (settings, databases, schemas)"),
])
def test_the_filter_refuses_settings_variables_and_duckdbs_catalogs(predicate, refusal):
    with pytest.raises(PredicateError) as refused:
        validate_predicate(predicate)
    assert str(refused.value) == refusal


@pytest.mark.parametrize("predicate, name", [
    ("len(range(0, 200000000)) > 0", "range"),  # 49.8 s past the 5 s limit, 14 GB: one call is no chunk DuckDB interrupts
    ("len(generate_series(1, 200000000)) > 0", "generate_series"),
    ("len(Repeat('x', 3000000000)) > 0", "repeat"),  # named in any case
    ("length(lpad('', 2000000000, 'x')) > 0", "lpad"),
    ("len(list_resize([1], 500000000)) > 0", "list_resize"),
    ("length(printf('%999999999d', 1)) > 0", "printf"),
    ("bit_length(bitstring('1', 2000000000)) > 0", "bitstring"),
    ("(WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r WHERE len(s) < 1e10) SELECT max(len(s)) FROM r) > 0",
     "WITH RECURSIVE"),
])
def test_the_filter_refuses_what_builds_a_value_of_a_size_it_names(predicate, name):
    with pytest.raises(PredicateError) as refused:
        validate_predicate(predicate)
    assert str(refused.value) == f"the filter may not build values of a size it names, nor recurse ({name})"


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
    for path in ("/run/no-such-run", "/run/no-such-run/episodes"):  # was 400, as for a mistaken filter
        with pytest.raises(urllib.error.HTTPError) as no_run:
            urllib.request.urlopen(server.url + path, timeout=30)
        assert no_run.value.code == 404 and "no run &#x27;no-such-run&#x27;" in no_run.value.read().decode()


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
        "Host 'evil.example' refused: a viewer bound to loopback answers to localhost, 127.0.0.1, ::1 and its --host only\n"
    )


@pytest.mark.parametrize("header, name", [("127.0.0.1:8765", "127.0.0.1"), ("[::1]:8765", "::1"), ("localhost", "localhost"), ("::1", "::1")])
def test_host_names_are_read_without_their_port(header, name):
    assert host_name(header) == name


@pytest.mark.parametrize("port", ["65536", "-1"])
def test_a_port_outside_the_tcp_range_is_a_usage_error_not_a_traceback(tmp_path, port):
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "view", "--port", port])
    assert result.exit_code == 2 and not isinstance(result.exception, OverflowError)
    assert f"Invalid value for '--port': {port} is not in the range 0<=x<=65535." in result.output


@pytest.mark.parametrize("host", ["", " "])
def test_an_empty_host_is_refused_not_served_on_every_interface(tmp_path, host, monkeypatch):
    """`--host "$VIEW_HOST"` with the variable unset passed "" to the socket, which binds every
    interface (0.0.0.0) and so answers any Host, with no word of it; every interface is asked for by name now."""
    monkeypatch.setattr(server_module, "make_server", lambda *args: pytest.fail(f"served on {args[1]!r}"))
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "view", "--host", host, "--port", "0"])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == ("Error: --host is empty, which would serve on every interface: leave --host out for loopback "
                             "(127.0.0.1), or name the address (--host 0.0.0.0 for every interface)\n")


def test_a_port_in_use_is_one_line_naming_the_way_past_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "view", "--port", str(port)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{port}: ")
    assert result.stderr.endswith("; choose another --port (0: any free port)\n")


# ------------------------------------------------------------- a small log, served in-process

RUN = "safety-run"
RTL_EPISODE = "case-\u202etxt.exe--r000"  # U+202E: the rest of the line reads right to left
EPISODES = ("case-0--r000", "case-1--r000", RTL_EPISODE)


async def _write_small_run(log: EventLog) -> None:
    async with log.writer(RUN) as writer:
        await writer.emit(EventDraft(RunStarted(
            started_at="2026-11-30T00:00:00+00:00", git_commit="test",
            benchmark={"release_id": "r", "release_stage": "frozen_eval", "path": "/r/cases.jsonl",
                       "training_prohibited": False, "runtime_contract_version": "v"},
            agent={"max_tool_actions": 4, "provider": "offline", "model": "m"},
            source_access_policy={"active": False}, config={"label_set": ["authentic", "manipulated"]})))
        for number, episode in enumerate(EPISODES):
            await writer.emit(EventDraft(EpisodeScheduled(
                case_id=episode.removesuffix("--r000"), prompt_group_id=f"pg-{number}", rollout_index=0, group_size=1,
                sampling_seed=number, image_sha256="0" * 64, image_path="runtime_input/images/x.jpg"), episode_id=episode))
            payloads = [EpisodeStarted(attempt=1, started_at="2026-11-30T00:00:00+00:00"),
                        JudgmentMade(verdict="authentic" if number == 0 else "manipulated", confidence=0.8, verdict_basis=[]),
                        EpisodeFinished(termination="completed", time_taken=2.0, total_tool_calls=0, llm_api_calls=1)]
            for step, payload in enumerate(payloads):
                await writer.emit(EventDraft(payload, episode_id=episode, attempt=1, step=step))


@pytest.fixture
def small_log(tmp_path: Path, monkeypatch) -> EventLog:
    monkeypatch.setenv("EVISCENE_RUNTIME_DIR", str(tmp_path / "runtime"))
    log = EventLog(tmp_path / "log.duckdb")
    # In a thread of its own: this module's browser (Playwright's sync API) marks an asyncio
    # loop as running in the main thread while it is open.
    with ThreadPoolExecutor(1) as thread:
        thread.submit(anyio.run, _write_small_run, log).result()
    return log


def _serve(log: EventLog, host: str) -> Iterator[str]:
    server = make_server(log, host, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def small_viewer(small_log) -> Iterator[str]:
    yield from _serve(small_log, "127.0.0.1")


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=60) as answered:
            return answered.status, answered.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def test_a_filter_past_its_time_limit_is_refused_and_the_viewer_answers_the_next_one(small_viewer, monkeypatch):
    """`events` (13 rows) cross-joined ten times: 13^10 rows, minutes of CPU (eight times
    takes 1.2 s here), interrupted at the limit."""
    monkeypatch.setattr(predicate_module, "FILTER_TIME_LIMIT_S", 0.5)
    slow = f"(SELECT count(*) FROM {', '.join(f'events e{n}' for n in range(10))}) > 0"
    started = time.monotonic()
    status, body = _get(f"{small_viewer}/run/{RUN}/episodes?filter={quote(slow)}")
    took = time.monotonic() - started
    assert status == 200
    assert '<p class="error" role="alert">Refused: the filter took longer than 0.5 s</p>' in body
    assert 'class="grid episodes"' not in body
    assert took < 10, took
    cpu = time.process_time()  # the query stopped: the viewer idles now
    time.sleep(1)
    assert time.process_time() - cpu < 0.3
    authentic = quote("verdict = 'authentic'")
    status, body = _get(f"{small_viewer}/run/{RUN}/episodes?filter={authentic}")
    assert status == 200 and '<span data-stat="matching">1</span> episodes' in body and "case-0--r000" in body


CROSS_SITE = "a cross-site request refused: the viewer answers its own pages, a typed URL and tools like curl only\n"


def test_a_request_from_another_sites_page_is_refused_on_every_route(small_viewer):
    """`<img src="http://127.0.0.1:8765/run/…/episodes?filter=…">` on any site sends
    Sec-Fetch-Site: cross-site (and a fetch an Origin): refused before anything runs."""
    port = small_viewer.rpartition(":")[2]
    paths = ["/", "/fragment/runs", f"/run/{RUN}", f"/run/{RUN}/episodes?filter=true", "/static/viewer.css", "/nowhere"]
    for path in paths:
        assert _get(small_viewer + path, {"Sec-Fetch-Site": "cross-site"}) == (403, CROSS_SITE), path
    assert _get(small_viewer + "/", {"Sec-Fetch-Site": "same-site"}) == (
        403, "a same-site request refused: the viewer answers its own pages, a typed URL and tools like curl only\n")
    for origin in ("http://evil.example", "null", f"http://localhost:{port}"):
        assert _get(small_viewer + f"/run/{RUN}/episodes?filter=true", {"Origin": origin}) == (
            403, f"a request from origin {origin!r} refused: the viewer answers its own pages only\n"), origin
    # An iframe of another site's page is no link followed.
    assert _get(small_viewer + "/", {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}) == (
        403, CROSS_SITE)
    # The viewer's own pages, a typed URL, curl (no header at all) and a link followed from
    # another site (a chat, a notebook) are answered.
    followed = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    for headers in ({}, {"Sec-Fetch-Site": "none"}, {"Sec-Fetch-Site": "same-origin", "Origin": small_viewer}, followed):
        status, body = _get(small_viewer + f"/run/{RUN}/episodes?filter=true", headers)
        assert status == 200 and '<span data-stat="matching">3</span> episodes' in body, headers
    # A followed link opens its page without the filter it carries: another site's script can
    # navigate too, and would have the viewer run its query.
    assert '<span data-stat="matching">0</span> episodes' in _get(small_viewer + f"/run/{RUN}/episodes?filter=false", {})[1]
    assert '<span data-stat="matching">3</span> episodes' in _get(small_viewer + f"/run/{RUN}/episodes?filter=false", followed)[1]


def test_a_viewer_bound_to_any_loopback_address_refuses_other_host_names(small_log):
    """`--host 127.0.0.2` binds loopback as 127.0.0.1 does: DNS rebinding is refused there too."""
    for url in _serve(small_log, "127.0.0.2"):
        port = url.rpartition(":")[2]
        assert _get(url + "/", {"Host": f"127.0.0.2:{port}"})[0] == 200
        assert _get(url + "/", {"Host": f"localhost:{port}"})[0] == 200
        assert _get(url + "/", {"Host": f"evil.example:{port}"}) == (
            403, "Host 'evil.example' refused: a viewer bound to loopback answers to localhost, 127.0.0.1, ::1 and its --host only\n")


@pytest.mark.parametrize("host, bound, names", [
    ("127.1", "127.0.0.1", {"127.1", "127.0.0.1", "localhost", "::1"}),
    ("::ffff:127.0.0.1", "::ffff:127.0.0.1", {"::ffff:127.0.0.1", "127.0.0.1", "localhost", "::1"}),
    ("[::1]", "::1", {"::1", "127.0.0.1", "localhost"}),
    ("LocalHost", "127.0.0.1", {"localhost", "127.0.0.1", "::1"}),
])
def test_the_host_names_a_loopback_viewer_answers_follow_its_bound_address(host, bound, names):
    assert allowed_host_names(host, bound) == frozenset(names)


@pytest.mark.parametrize("host, bound", [("0.0.0.0", "0.0.0.0"), ("::", "::"), ("192.168.1.5", "192.168.1.5")])
def test_a_viewer_bound_off_loopback_answers_any_host_name(host, bound):
    assert allowed_host_names(host, bound) is None


def test_an_id_holding_a_bidi_override_reverses_only_itself(small_viewer):
    """U+202E in an episode id would reverse the text after it; isolated in <bdi>, it cannot,
    and no attribute (a link, a value) carries the markup."""
    status, body = _get(f"{small_viewer}/run/{RUN}/episode/{quote(RTL_EPISODE, safe='')}")
    assert status == 200
    assert f"<h1><bdi>{RTL_EPISODE}</bdi></h1>" in body
    assert f'<p class="muted">case <bdi>{RTL_EPISODE.removesuffix("--r000")}</bdi> · rollout 0' in body
    status, listing = _get(f"{small_viewer}/run/{RUN}/episodes")
    link = f'<a href="/run/{RUN}/episode/{quote(RTL_EPISODE, safe="")}"><bdi>{RTL_EPISODE}</bdi></a>'
    assert status == 200 and link in listing
    assert "case-0--r000</a>" in listing  # text that cannot reorder anything is left as it was
    assert not any('="<bdi>' in page or "<bdi>\"" in page for page in (body, listing))
