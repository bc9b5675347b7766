"""Run-level behaviour on a few cases: failures stay in their episode, ablations remove
tools, timeouts end episodes, bad flags are clear errors."""

import gc
import json
import sys

import anyio
import pytest
from click.testing import CliRunner

from eviscene.agent.provider import ModelRequest, ModelResponse, ProviderError
from eviscene.cli.main import cli
from eviscene.eval import run as run_module
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.providers import OfflineProvider
from eviscene.log import EventLog


# The sha256 of the demo corpus's images/p0057-1.jpg, a picture the first case's agent sees on a visit.
HAIL_PICTURE_SHA256 = "80fd2da8f91681ebbbe3e5cbed1ab6ee4b9f650e5716bd17a8a9eb4ec14ec7a2"


class FailsOnSeed(OfflineProvider):
    """Fails every call of one episode (picked by its sampling seed)."""

    def __init__(self, seed: int):
        super().__init__()
        self.seed = seed

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.sampling_seed == self.seed:
            raise ProviderError("upstream returned 500 three times")
        return await super().complete(request)


def options(release, **flags) -> EvalOptions:
    return EvalOptions(benchmark=str(release / "runtime_input" / "cases.jsonl"), **flags)


def test_one_failing_episode_does_not_stop_the_others(release, tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    first = run_module.plan_run(options(release, limit=3)).specs[1]
    summary = anyio.run(lambda: start_run(log, options(release, limit=3, concurrency=2), provider=FailsOnSeed(first.sampling_seed)))
    assert summary.terminations == {"completed": 2, "error": 1}
    rows = log.sql("SELECT episode_id, termination, error FROM episodes ORDER BY episode_id").to_pylist()
    failed = [r for r in rows if r["termination"] == "error"]
    assert [r["episode_id"] for r in failed] == [first.episode_id]
    assert "ProviderError: upstream returned 500 three times" in failed[0]["error"]
    calls = log.sql("SELECT error FROM model_calls WHERE episode_id = ?", [first.episode_id]).to_pylist()
    assert calls == [{"error": "upstream returned 500 three times"}]  # the failed call is on the record


def test_episodes_run_with_the_loaded_heap_left_out_of_collections(release, tmp_path):
    # The release, corpus indexes and OCR models loaded before the episodes are frozen while
    # they run (a full collection walking them paused the event loop 70-100 ms), then thawed.
    frozen_while_running = []

    class Watches:
        def planned(self, run_id: str, episodes: int) -> None: ...

        def finished(self, spec, finished) -> None:
            frozen_while_running.append(gc.get_freeze_count())

    log = EventLog(tmp_path / "log.duckdb")
    summary = anyio.run(lambda: start_run(log, options(release, limit=2), observer=Watches()))
    assert summary.terminations == {"completed": 2}
    assert len(frozen_while_running) == 2 and min(frozen_while_running) > 10_000
    assert gc.get_freeze_count() == 0


def test_cli_exits_1_when_an_episode_errored(release, tmp_path, monkeypatch):
    first = run_module.plan_run(options(release, limit=2)).specs[0]
    monkeypatch.setattr(run_module, "make_provider", lambda _: FailsOnSeed(first.sampling_seed))
    result = CliRunner().invoke(
        cli,
        ["--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"),
         "--limit", "2", "--no-progress", "--output-dir", str(tmp_path / "run")],
    )
    assert result.exit_code == 1, result.output
    assert "2 of 2 episodes ran (completed 1, error 1)" in result.output
    assert (tmp_path / "run" / "run_manifest.json").is_file()  # materialized even when an episode errored


def test_ablation_removes_tool_families(release, tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(start_run, log, options(release, limit=2, disable_image_retrieval=True, disable_evidence_inspection=True))
    used = set(log.sql("SELECT DISTINCT payload->>'tool' AS tool FROM events WHERE type = 'tool.called'")["tool"].to_pylist())
    assert used == {"text_search"}
    offered = log.sql(
        "SELECT DISTINCT unnest(from_json(decode(b.content)::JSON->'tools', '[\"JSON\"]'))->'function'->>'name' AS name "
        "FROM events e JOIN blobs b ON b.sha256 = e.payload->>'request_sha256' WHERE e.type = 'model.called'"
    )["name"].to_pylist()
    assert set(offered) == {"text_search"}
    manifest = log.sql("SELECT payload->'agent'->'tool_families' AS f FROM events WHERE type = 'run.started'").to_pylist()[0]["f"]
    assert '"image_retrieval":{"enabled":false' in manifest.replace(" ", "")


def test_a_run_with_the_tool_cache_shows_no_image_its_tightened_policy_blocks(release, tmp_path):
    """The policy gained the sha256 of a picture an earlier run's visit listed, same cache
    partition: a run with the tool cache visits the page again and logs exactly what a run
    without any cache does, the picture left out and its block logged (before, the earlier
    visit was served, the picture's URL and caption shown, with no gate.decided)."""
    policy = json.loads((release / "private" / "source_access_policy.json").read_text(encoding="utf-8"))
    tightened = tmp_path / "policy.json"
    tightened.write_text(json.dumps({**policy, "blocked_content_sha256": [*policy["blocked_content_sha256"], HAIL_PICTURE_SHA256]}))
    picture = "https://valley-herald.example/2023/07/hail-the-size-of-golf-balls-hits-northern-italy/#image=images/p0057-1.jpg"

    def visits_and_blocks(log, run_id):
        rows = log.sql("SELECT type, payload::VARCHAR AS p FROM events WHERE run_id = ? AND (type = 'gate.decided' "
                       "OR (type = 'tool.returned' AND payload->>'tool' = 'visit')) ORDER BY seq", [run_id]).to_pylist()
        return [(r["type"], {k: v for k, v in json.loads(r["p"]).items() if k not in ("call_id", "latency_ms", "cache_hit")})
                for r in rows]

    control_log = EventLog(tmp_path / "control.duckdb")
    control = anyio.run(lambda: start_run(control_log, options(release, limit=1, source_access_policy=str(tightened))))
    expected = visits_and_blocks(control_log, control.run_id)
    assert ("gate.decided", {"type": "gate.decided", "gate": "source_access_policy", "subject": picture, "passed": False,
                             "reasons": ["blocked_content_sha256"]}) in expected

    log = EventLog(tmp_path / "log.duckdb")
    earlier = anyio.run(lambda: start_run(log, options(release, limit=1, tool_cache_enabled=True)))
    assert any(picture in payload["observation"] for kind, payload in visits_and_blocks(log, earlier.run_id) if kind == "tool.returned")
    later = anyio.run(lambda: start_run(log, options(release, limit=1, tool_cache_enabled=True, source_access_policy=str(tightened))))
    assert visits_and_blocks(log, later.run_id) == expected
    hits = log.sql("SELECT payload->>'tool' AS tool FROM events WHERE run_id = ? AND type = 'tool.returned' "
                   "AND payload->>'cache_hit' = 'true'", [later.run_id])["tool"].to_pylist()
    assert hits and "visit" not in hits  # the searches were served from the earlier run; the visit was not


def test_timeout_ends_episodes_as_timeout(release, tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    summary = anyio.run(start_run, log, options(release, limit=1, timeout=0.001))
    assert summary.terminations == {"timeout": 1}
    assert log.sql("SELECT error FROM episodes").to_pylist()[0]["error"].startswith("episode exceeded its 0.001 s timeout")


def test_a_timeout_cuts_an_episode_off_in_its_perception_step_and_the_read_left_behind_changes_nothing(release, tmp_path, monkeypatch):
    """The OCR of the perception step ran in a thread the timeout could not cancel: an episode
    with a 0.08 s timeout ran on for the whole read (5-7 s on a loaded machine) and recorded that
    as its time_taken. Here the engine takes 3 s per picture."""
    from collections import OrderedDict
    from threading import Event, enumerate as threads

    from eviscene.tools import ocr

    released, engine_calls = Event(), []

    def slow_engine(*_args, **_kwargs):
        engine_calls.append(1)
        released.wait(3)
        raise RuntimeError("this read's result is never used")

    monkeypatch.setattr(ocr, "_get_engine", lambda: slow_engine)
    monkeypatch.setattr(ocr, "_cache", OrderedDict())  # no earlier test's reads of these pictures
    log = EventLog(tmp_path / "log.duckdb")
    summary = anyio.run(lambda: start_run(log, options(release, limit=2, concurrency=1, timeout=0.2)))
    rows = log.sql("SELECT termination, error, time_taken FROM episodes").to_pylist()
    released.set()
    for worker in threads():  # the reads left behind end (the second never reaches the engine)
        if worker.name == "AnyIO worker thread":
            worker.join(5)
    assert summary.terminations == {"timeout": 2} and summary.errored == 2
    assert [row["error"] for row in rows] == ["episode exceeded its 0.2 s timeout"] * 2
    assert all(row["time_taken"] < 1.5 for row in rows), rows  # cut off at the deadline, not after the 3 s read
    assert len(engine_calls) == 1  # the second picture's read, queued behind the first, gave up once its episode had
    # nothing of the reads left behind reached the log (no perception report for a later run to reuse) or the OCR cache
    assert log.sql("SELECT count(*) AS n FROM events WHERE type = 'perception.reported'")["n"].to_pylist() == [0]
    assert log.sql("SELECT count(*) AS n FROM events WHERE type = 'episode.finished'")["n"].to_pylist() == [2]
    assert not ocr._cache


def test_a_timeout_cuts_an_episode_off_in_an_image_tool_and_the_search_left_behind_changes_nothing(release, tmp_path, monkeypatch):
    """The image tools (reverse image search, comparison with a reference image) ran in a
    worker thread the timeout could not cancel: an episode past its timeout ran on until the
    search ended, recorded its tool.returned after the deadline and the whole search as its
    time_taken. Here the reverse image search takes 6 s; the timeout is 1 s."""
    from threading import Event

    from eviscene.release.case_image import CaseImage
    from eviscene.tools import image_index, ocr

    case_image = run_module.plan_run(options(release, limit=1)).specs[0].case.image_file
    ocr.read_text(CaseImage.of_file(case_image))  # perception is then a cache hit: the deadline falls in the search
    searching, released, left, ended_by = Event(), Event(), Event(), []
    real_similar, real_compare, compares = image_index.ImageIndex.similar, image_index.compare, []

    def slow_similar(index, query, *args, **kwargs):
        searching.set()
        released.wait(6)
        try:
            return real_similar(index, query, *args, **kwargs)
        except BaseException as exc:
            ended_by.append(type(exc).__name__)
            raise
        finally:
            left.set()

    def counted_compare(*args, **kwargs):
        compares.append(1)
        return real_compare(*args, **kwargs)

    monkeypatch.setattr(image_index.ImageIndex, "similar", slow_similar)
    monkeypatch.setattr(image_index, "compare", counted_compare)
    log = EventLog(tmp_path / "log.duckdb")
    summary = anyio.run(lambda: start_run(log, options(release, limit=1, timeout=1.0)))
    rows = log.sql("SELECT termination, error, time_taken FROM episodes").to_pylist()
    events = log.sql("SELECT type, payload->>'tool' AS tool FROM events WHERE type IN ('tool.called', 'tool.returned', 'episode.finished') "
                     "ORDER BY seq").to_pylist()
    released.set()
    assert left.wait(30)  # the search left behind has ended
    assert searching.is_set() and summary.terminations == {"timeout": 1}
    assert [row["error"] for row in rows] == ["episode exceeded its 1 s timeout"]
    assert rows[0]["time_taken"] < 4, rows  # cut off at the deadline, not after the 6 s search
    # the search's call is on the record, unanswered: nothing the thread left behind computed reached the log
    assert events == [{"type": "tool.called", "tool": "reverse_image_search"}, {"type": "episode.finished", "tool": None}]
    assert ended_by == ["CancelledError"] and not compares  # it gave up before its first comparison


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--case-id", "nope"], "nope"),
        (["--shard-count", "2", "--shard-index", "2"], "--shard-index"),
        (["--rollouts-per-case", "0"], "--rollouts-per-case"),
        # Numbers the log cannot keep (JSON has no inf or nan; a count is read as INTEGER, a seed
        # written as 64 bits): before, the whole run ran, then failed as it was written, or its
        # views could never read it again.
        (["--timeout", "inf"], "Invalid value for '--timeout': 'inf' is not a finite number"),
        (["--provider-outage-timeout", "nan"], "Invalid value for '--provider-outage-timeout': 'nan' is not a finite number"),
        (["--tool-cache-ttl", "1e400"], "Invalid value for '--tool-cache-ttl': '1e400' is not a finite number"),
        (["--base-sampling-seed", str(2**70)], f"Invalid value for '--base-sampling-seed': {2**70} is not in the range"),
        (["--shard-count", str(2**31), "--shard-index", "0"], f"Invalid value for '--shard-count': {2**31} is not in the range x<=2147483647"),
        (["--limit", str(2**64)], "Invalid value for '--limit'"),
    ],
)
def test_bad_flags_are_one_line_errors(release, tmp_path, flags, message):
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark", str(release / "runtime_input" / "cases.jsonl"),
              "--no-progress", "--no-materialize", *flags]
    )
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "log.duckdb").exists() or EventLog(tmp_path / "log.duckdb").sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 0}]


@pytest.mark.parametrize("flags, message", [
    (["--train-ratio", "nan"], "Invalid value for '--train-ratio': 'nan' is not a finite number"),
    (["--validation-ratio", "inf"], "Invalid value for '--validation-ratio': 'inf' is not a finite number"),
    (["--export-concurrency", str(2**66)], f"Invalid value for '--export-concurrency': {2**66} is not in the range"),
    (["--short-max-tokens", str(2**64)], f"Invalid value for '--short-max-tokens': {2**64} is not in the range"),
])
def test_dataset_export_numbers_the_manifest_cannot_keep_are_refused_naming_the_flag(tmp_path, flags, message):
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "dataset", "export", "--run", "r", "--out", str(tmp_path / "d"), *flags])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "d").exists()


def test_ray_missing_names_the_install_from_the_checkout(release, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "log.duckdb"), "eval", "run", "--benchmark",
                                      str(release / "runtime_input" / "cases.jsonl"), "--limit", "1", "--executor", "ray"])
    assert (result.exit_code, result.stderr) == (2, "Error: --executor ray needs Ray: pip install '.[ray]' in the EviScene checkout\n")
