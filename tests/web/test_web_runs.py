"""End to end: `start_run` with the web backends pointed at loopback servers, and the tool
cache read back from the log across runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from web_servers import SECRET, start_gateway

from eviscene.eval.options import EvalOptions
from eviscene.errors import EvisceneError
from eviscene.eval.run import _cached_perception, resume_command, resume_run, start_run
from eviscene.log import EventLog
from eviscene.tools.cache import ToolCache

BENCHMARK = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
CASES = ["demo-0001"]


@pytest.fixture
def log(tmp_path) -> EventLog:
    return EventLog(tmp_path / "web.duckdb")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("TOOL_CACHE_ENABLED", "TOOL_CACHE_TTL_SECONDS", "PERCEPTION_CACHE_ENABLED", "PERCEPTION_CACHE_VERSION"):
        monkeypatch.delenv(name, raising=False)


def _run(log, site, policy_path, case_ids=CASES, **extra):
    options = EvalOptions(benchmark=str(BENCHMARK), case_ids=case_ids, search_backend="searxng", searxng_url=site.base,
                          web_timeout=2.0, source_access_policy=str(policy_path), allow_private_network=True, **extra)
    summary = anyio.run(start_run, log, options)
    assert summary.errored == 0, summary.terminations
    return summary.run_id


def _returned(log, run_id):
    rows = log.sql("SELECT payload::VARCHAR AS p FROM events WHERE run_id = ? AND type = 'tool.returned' ORDER BY seq",
                   [run_id])["p"].to_pylist()
    return [json.loads(r) for r in rows]


def _gates(log, run_id, gate):
    rows = log.sql("SELECT payload::VARCHAR AS p FROM events WHERE run_id = ? AND type = 'gate.decided' ORDER BY seq",
                   [run_id])["p"].to_pylist()
    return [g for g in map(json.loads, rows) if g["gate"] == gate]


def _manifest(log, run_id):
    row = log.sql("SELECT payload::VARCHAR AS p FROM events WHERE run_id = ? AND type = 'run.started'", [run_id])["p"]
    return json.loads(row.to_pylist()[0])


def test_web_run_end_to_end(log, site, policy_file):
    run_id = _run(log, site, policy_file(), case_ids=["demo-0001", "demo-0002"])
    returned = _returned(log, run_id)
    tools = [r["tool"] for r in returned]
    assert "text_search" in tools and "visit" in tools
    assert all(r["status"] != "error" or "visit" == r["tool"] for r in returned)
    assert not any(r["cache_hit"] for r in returned)  # the cache is off by default
    searches = [r for r in returned if r["tool"] == "text_search" and r["status"] == "ok"]
    assert searches and all(s["url"].startswith(site.base) for r in searches for s in r["sources"])
    # Every blocked result was a gate decision, and no blocked content reached the model.
    blocks = _gates(log, run_id, "source_access_policy")
    assert {b["reasons"][0] for b in blocks} >= {"blocked_domain", "blocked_url_prefix"}
    texts = log.sql("SELECT decode(b.content) AS t FROM events e JOIN blobs b ON b.sha256 = e.payload->>'request_sha256' "
                    "WHERE e.type = 'model.called' AND e.run_id = ?", [run_id])["t"].to_pylist()
    texts += [r["observation"] for r in returned]
    assert texts and not any(SECRET in t for t in texts)
    assert all(g["passed"] for g in _gates(log, run_id, "judgment_schema"))
    manifest = _manifest(log, run_id)
    backend = manifest["agent"]["tool_backend"]
    assert backend["kind"] == "web" and backend["searxng_url"] == site.base + "/" and backend["web_visit"] is True
    assert backend["enabled_tools"] == ["text_search", "text_image_search", "visit"]
    assert manifest["agent"]["web_cache_enabled"] is False and manifest["agent"]["tool_cache_ttl_seconds"] == 3600
    assert manifest["agent"]["perception_cache_enabled"] is True
    assert manifest["config"]["search_backend"] == "searxng" and manifest["config"]["tool_cache_enabled"] is False
    assert manifest["source_access_policy"]["cache_partition"] == "web-test-v1"


def test_tool_cache_across_runs(log, site, policy_file, monkeypatch):
    policy = policy_file()
    monkeypatch.setenv("TOOL_CACHE_ENABLED", "1")
    first = _run(log, site, policy)
    live = _returned(log, first)
    assert live and not any(r["cache_hit"] for r in live)
    assert _manifest(log, first)["agent"]["web_cache_enabled"] is True
    served = site.requests()

    # Read back from the log, but not by a clock behind the results: a result stamped after
    # now (a merged log's forged stamps) would otherwise stay fresh for good.
    backend = _manifest(log, first)["agent"]["tool_backend"]["backend_id"]
    assert len(ToolCache.from_log(log, backend_id=backend, partition="web-test-v1")) > 0
    behind = ToolCache.from_log(log, backend_id=backend, partition="web-test-v1", clock=lambda: time.time() - 600)
    assert len(behind) == 0

    # A later run: every cacheable call is served from the log, the servers are not asked.
    second = _run(log, site, policy)
    cached = _returned(log, second)
    assert site.requests() == served
    assert [r["tool"] for r in cached] == [r["tool"] for r in live]
    for old, new in zip(live, cached):
        cacheable = old["status"] in ("ok", "empty")
        assert new["cache_hit"] is cacheable
        assert new["observation"] == old["observation"] and new["data"] == old["data"]  # same episode shape: same ids
    ids = [s["evidence_id"] for r in cached for s in r["sources"]]
    assert ids and all(i.startswith("ev-") for i in ids)
    assert len(_gates(log, second, "source_access_policy")) == len(_gates(log, first, "source_access_policy"))
    assert all(g["passed"] for g in _gates(log, second, "judgment_schema"))

    # Another cache partition: nothing reused.
    third = _run(log, site, policy_file("web-test-v2"))
    assert not any(r["cache_hit"] for r in _returned(log, third)) and site.requests() > served

    # Expired after the TTL.
    monkeypatch.setenv("TOOL_CACHE_TTL_SECONDS", "0")
    before = site.requests()
    fourth = _run(log, site, policy)
    assert not any(r["cache_hit"] for r in _returned(log, fourth)) and site.requests() > before
    assert _manifest(log, fourth)["agent"]["tool_cache_ttl_seconds"] == 0

    # Off by default.
    monkeypatch.delenv("TOOL_CACHE_ENABLED")
    monkeypatch.delenv("TOOL_CACHE_TTL_SECONDS")
    before = site.requests()
    fifth = _run(log, site, policy)
    assert not any(r["cache_hit"] for r in _returned(log, fifth)) and site.requests() > before

    # The flag overrides the environment, and the run's manifest records it.
    sixth = _run(log, site, policy, tool_cache_enabled=True, tool_cache_ttl_seconds=600)
    assert all(r["cache_hit"] for r in _returned(log, sixth) if r["status"] in ("ok", "empty"))
    assert _manifest(log, sixth)["agent"]["tool_cache_ttl_seconds"] == 600


def test_perception_cache_switch_and_version(log, site, policy_file, monkeypatch):
    policy = policy_file()

    def perception(run_id):
        rows = log.sql("SELECT payload::VARCHAR AS p FROM events WHERE run_id = ? AND type = 'perception.reported'",
                       [run_id])["p"].to_pylist()
        return [json.loads(r)["cache_hit"] for r in rows]

    first = _run(log, site, policy)
    assert perception(first) == [False]
    assert perception(_run(log, site, policy)) == [True]
    # Not by a clock behind the reports: one stamped after now (a merged log's forged stamp)
    # would otherwise win over every later one.
    assert len(_cached_perception(log)) == 1 and _cached_perception(log, clock=lambda: time.time() - 600) == {}
    monkeypatch.setenv("PERCEPTION_CACHE_VERSION", "perception-v2")
    v2 = _run(log, site, policy)
    assert perception(v2) == [False] and _manifest(log, v2)["agent"]["perception_cache_version"] == "perception-v2"
    assert perception(_run(log, site, policy)) == [True]
    monkeypatch.setenv("PERCEPTION_CACHE_ENABLED", "0")
    off = _run(log, site, policy)
    assert perception(off) == [False] and _manifest(log, off)["agent"]["perception_cache_enabled"] is False


def test_default_run_keeps_corpus_tools(log, tmp_path):
    options = EvalOptions(benchmark=str(BENCHMARK), case_ids=CASES)
    summary = anyio.run(start_run, log, options)
    backend = _manifest(log, summary.run_id)["agent"]["tool_backend"]
    assert backend["kind"] == "corpus" and backend["backend_id"].startswith("corpus:")


def test_a_search_service_that_stays_down_stops_the_run_and_resume_finishes_it(log, site, policy_file):
    """A dead SearXNG gives no episode a verdict argued from searches that never ran: the run
    stops once the outage timeout is spent, its episodes unfinished, and `eval resume` with
    the service back runs each of them once, every search answered."""
    gateway = start_gateway(site, down_for=10**9)
    try:
        options = EvalOptions(benchmark=str(BENCHMARK), case_ids=["demo-0001", "demo-0002"], search_backend="searxng",
                              searxng_url=gateway.base, web_timeout=2.0, source_access_policy=str(policy_file()),
                              allow_private_network=True, provider_outage_timeout=1.5, concurrency=2)
        stopped = anyio.run(start_run, log, options)
        assert stopped.stopped == (f"the search service {gateway.base}/ unreachable for 1.5 s "
                                   "(HTTP 503 from a gateway), the outage timeout")
        assert stopped.ran == 0 and stopped.unfinished == 2 and stopped.status == "running_or_interrupted"
        assert log.sql("SELECT count(*) AS n FROM events WHERE run_id = ? AND type IN ('episode.finished', 'tool.returned')",
                       [stopped.run_id])["n"].to_pylist() == [0]

        gateway.down_for = 0  # the service is back
        resumed = anyio.run(lambda: resume_run(log, stopped.run_id, trust_endpoints=True))  # its own private-network run
    finally:
        gateway.close()
    assert resumed.stopped == "" and resumed.terminations["error"] == 0 and resumed.unfinished == 0
    finished = log.sql("SELECT episode_id, count(*) AS n FROM events WHERE run_id = ? AND type = 'episode.finished' "
                       "GROUP BY episode_id", [stopped.run_id]).to_pylist()
    assert len(finished) == 2 and all(row["n"] == 1 for row in finished)
    searches = [r for r in _returned(log, stopped.run_id) if r["tool"] == "text_search"]
    assert searches and all(r["status"] == "ok" for r in searches)


def test_time_spent_waiting_for_a_down_search_service_is_not_the_episodes(log, site, policy_file):
    """The episode's --timeout counts its own work: 8.5 s of waiting for the service (five tries,
    each a search and a look at its health page turned away) does not end a 6 s episode as a timeout."""
    gateway = start_gateway(site, down_for=10)
    try:
        options = EvalOptions(benchmark=str(BENCHMARK), case_ids=CASES, search_backend="searxng", searxng_url=gateway.base,
                              web_timeout=2.0, source_access_policy=str(policy_file()), allow_private_network=True,
                              timeout=6.0)
        summary = anyio.run(start_run, log, options)
    finally:
        gateway.close()
    assert gateway.turned_away == 10
    assert summary.terminations == {"completed": 1}
    (finished,) = log.sql("SELECT payload->>'time_taken' AS t FROM events WHERE run_id = ? AND type = 'episode.finished'",
                          [summary.run_id])["t"].to_pylist()
    assert float(finished) > 8.5


@pytest.fixture
def credentialed_stop(log, site, policy_file):
    """A run whose search URL holds credentials, stopped by its service staying down, the service
    back up when the test starts: (the service's URL without them, the URL with them, the stop)."""
    gateway = start_gateway(site, down_for=10**9)
    secret_url = gateway.base.replace("http://", "http://searcher:hunter2-long-pass@")
    try:
        options = EvalOptions(benchmark=str(BENCHMARK), case_ids=CASES, search_backend="searxng", searxng_url=secret_url,
                              web_timeout=2.0, source_access_policy=str(policy_file()), allow_private_network=True,
                              provider_outage_timeout=1.0)
        stopped = anyio.run(start_run, log, options)
        gateway.down_for = 0  # the service is back
        yield gateway.base, secret_url, stopped
    finally:
        gateway.close()


def test_a_run_whose_search_url_holds_credentials_is_resumed_with_the_url_given_again(log, credentialed_stop):
    """The log keeps the URL masked, so a resume cannot send the credentials by itself: the command
    the stop prints asks for the URL again, and a resume takes it only for the run's own service."""
    base, secret_url, stopped = credentialed_stop
    masked = base.replace("http://", "http://[REDACTED]@")
    assert stopped.unfinished == 1 and masked in stopped.stopped and "hunter2" not in stopped.stopped
    assert resume_command(log, stopped.run_id) == (f"eviscene --db {log.path} eval resume {stopped.run_id} --trust-endpoints "
                                                   f"--searxng-url 'http://[REDACTED]@{base[7:]}'")

    def resume(**given):
        return anyio.run(lambda: resume_run(log, stopped.run_id, trust_endpoints=True, **given))

    with pytest.raises(EvisceneError, match=r"resume it with --searxng-url and the URL in full \(http://\[REDACTED\]@"):
        resume()
    with pytest.raises(EvisceneError, match=r"put the URL's credentials in place of \[REDACTED\]"):
        resume(searxng_url=masked)
    with pytest.raises(EvisceneError, match=r"is not the search service run .* used \(http://\[REDACTED\]@127"):
        resume(searxng_url=secret_url.replace("127.0.0.1", "localhost"))
    resumed = resume(searxng_url=secret_url)
    assert resumed.unfinished == 0 and resumed.terminations == {"completed": 1}
    assert log.sql("SELECT count(*) AS n FROM events WHERE payload::VARCHAR LIKE '%hunter2%'")["n"].to_pylist() == [0]


def test_a_resume_whose_directory_write_meets_a_held_log_names_the_resume_with_the_url_given_again(
        log, credentialed_stop, tmp_path, monkeypatch):
    """When the run directory's write found the log held, the note's resume line was built from
    nothing read: it lacked the --searxng-url a run whose URL holds credentials must be given
    again, so the printed command was refused as pasted. It is now the one read before the write."""
    from click.testing import CliRunner

    from eviscene.cli import eval as eval_cli
    from eviscene.cli.main import cli
    from eviscene.errors import LogLockedError

    base, secret_url, stopped = credentialed_stop
    out_dir = tmp_path / "runs" / "r"

    def resume():
        return CliRunner().invoke(cli, ["--db", str(log.path), "eval", "resume", stopped.run_id, "--trust-endpoints",
                                        "--no-progress", "--searxng-url", secret_url, "--output-dir", str(out_dir)])

    assert resume().exit_code == 0 and (out_dir / "run_manifest.json").is_file()  # finished, its directory written

    def held(*args, **kwargs):
        raise LogLockedError(f"log {log.path} is held for writing by pid 4242 (python -c)")

    monkeypatch.setattr(eval_cli, "materialize_run", held)
    resumed = resume()  # nothing left to run: its directory is written again
    assert resumed.exit_code == 0, (resumed.stdout, resumed.stderr)
    assert resumed.stderr.splitlines()[-1] == (
        f"no run directory written (log {log.path} is held for writing by pid 4242 (python -c)); "
        f"`eviscene --db {log.path} eval resume {stopped.run_id} --trust-endpoints "
        f"--searxng-url 'http://[REDACTED]@{base[7:]}' --output-dir {out_dir}` writes it")
    assert "hunter2" not in resumed.stdout + resumed.stderr
