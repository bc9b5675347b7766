"""Runs named as the seed names them, statuses and exit codes that count what the seed counts,
resume that covers the whole run (retry errors, a moved release, the run directory), and a
crashed run recorded as failed. Real offline runs on a few cases of the bundled release."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from eviscene.agent.provider import ModelRequest, ModelResponse, ProviderError, ProviderOutage
from eviscene.cli.main import cli
from eviscene.eval import preflight
from eviscene.eval import run as run_module
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.providers import OfflineProvider
from eviscene.errors import EvisceneError, LogLockedError
from eviscene.exports.run_dir import _write_traces, materialize_run
from eviscene.log import EventLog
from eviscene.store.layout import check_run_id, run_folder
from eviscene.store.manifest import MANIFEST
from eviscene.store.locks import RunLock

EVISCENE = str(Path(sys.executable).with_name("eviscene"))


class FailsOnSeeds(OfflineProvider):
    """Fails every call of the episodes with these sampling seeds (a provider outage for them)."""

    def __init__(self, seeds: set[int], message: str = "upstream returned 500 three times"):
        super().__init__()
        self.seeds = seeds
        self.message = message

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.sampling_seed in self.seeds:
            raise ProviderError(self.message)
        return await super().complete(request)


class DownFromSeed(OfflineProvider):
    """The endpoint goes down for good when the episode with this sampling seed calls it: the
    run stops there, that episode and those after it unfinished."""

    def __init__(self, seed: int):
        super().__init__()
        self.seed = seed

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.sampling_seed == self.seed:
            raise ProviderOutage("http://127.0.0.1:9/v1 refused connections")
        return await super().complete(request)


def benchmark(release: Path) -> str:
    return str(release / "runtime_input" / "cases.jsonl")


def invoke(log_path: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(log_path), *args])


def runs(log: EventLog) -> dict[str, dict]:
    return {row["run_id"]: row for row in log.sql("SELECT * FROM runs").to_pylist()}


def test_output_dir_names_the_run_and_a_second_run_of_that_name_is_refused(release, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    first = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                   "--output-dir", "runs/my-experiment")
    assert first.exit_code == 0, first.output
    assert "run my-experiment: 1 of 1 episodes ran (completed 1); status completed" in first.output
    manifest = json.loads((tmp_path / "runs" / "my-experiment" / "run_manifest.json").read_text())
    assert manifest["run_id"] == "my-experiment" and manifest["status"] == "completed"

    again = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                   "--output-dir", "elsewhere/my-experiment")
    assert again.exit_code == 2
    assert "run 'my-experiment' already exists" in again.output and "Traceback" not in again.output

    named = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                   "--output-dir", "elsewhere/my-experiment", "--run-id", "ablation-no-web", "--disable-web-search",
                   "--rollouts-per-case", "2", "--base-sampling-seed", "7")
    assert named.exit_code == 0, named.output
    listed = runs(EventLog(log_path))
    assert set(listed) == {"my-experiment", "ablation-no-web"}
    assert listed["my-experiment"]["label"] == "rollouts=1 seed=1729"
    assert listed["ablation-no-web"]["label"] == "rollouts=2 seed=7 no-web-search"

    bad = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--run-id", "../x")
    assert bad.exit_code == 2 and bad.stderr.startswith("Error: --run-id: invalid run id '../x'"), bad.output
    spaced = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                    "--output-dir", "runs/bad name")
    assert spaced.exit_code == 2 and "--run-id:" not in spaced.stderr  # the option the user gave is named
    assert spaced.stderr == ("Error: --output-dir: invalid run id 'bad name': a run id is 1 to 200 characters (ASCII letters, "
                             "digits and ._:+=@-), the first a letter or digit (the run is named after the folder; --run-id "
                             "names it otherwise)\n"), spaced.output
    assert set(runs(EventLog(log_path))) == {"my-experiment", "ablation-no-web"} and not (tmp_path / "runs" / "bad name").exists()


def test_an_invalid_run_id_is_refused_stating_the_whole_rule(release, tmp_path):
    """`-dash`, `_x` and a name of 201 characters are made only of letters, digits and ._:+=@-,
    all the refusal said a run id had to be; the rule it applied also asks for a letter or digit
    first and at most 200 characters, which it now says."""
    rule = "a run id is 1 to 200 characters (ASCII letters, digits and ._:+=@-), the first a letter or digit"
    log_path = tmp_path / "log.duckdb"
    for flags, said in ((("--output-dir", str(tmp_path / "runs" / "-dash")),
                         f"--output-dir: invalid run id '-dash': {rule} (the run is named after the folder; --run-id names it otherwise)"),
                        (("--run-id", "_x"), f"--run-id: invalid run id '_x': {rule}"),
                        (("--run-id", "b" * 201), f"--run-id: invalid run id '{'b' * 201}': {rule}")):
        refused = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", *flags)
        assert (refused.exit_code, refused.stderr) == (2, f"Error: {said}\n")
    assert not log_path.exists() and not (tmp_path / "runs").exists()
    assert check_run_id("b" * 200) == "b" * 200 and check_run_id("0.x_y:z+=@-") == "0.x_y:z+=@-"


def test_an_output_dir_ending_in_no_folder_name_is_refused_saying_so_written_or_not(release, tmp_path, monkeypatch):
    """`eval run --no-materialize --output-dir .` (or `..`, `runs/..`) named the run `Path(output_dir).name`,
    `''` or `'..'`, refused as "invalid run id ''", which did not say what to do; written (the default),
    the same paths were refused by other checks, each in its own words (the folder this command runs in,
    a '..' out of a missing folder). Both now say, before any work, that the path names no folder to
    name the run after, in one message."""
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    for out in (".", "..", "runs/..", "/"):
        for written in ("--materialize", "--no-materialize"):
            refused = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                             "--output-dir", out, written)
            assert (refused.exit_code, refused.stderr) == (
                2, f"Error: --output-dir {out} ends in no folder's name, which names the run: name the folder, "
                   "e.g. --output-dir runs/my-run (--run-id names the run otherwise)\n"), (out, written)
    assert not log_path.exists() and sorted(os.listdir(tmp_path)) == []
    # unwritten and named by --run-id, the path names nothing: the run runs
    named = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                   "--output-dir", ".", "--no-materialize", "--run-id", "here")
    assert named.exit_code == 0 and "run here: 1 of 1 episodes ran (completed 1); status completed" in named.output, named.output


def test_a_run_id_ending_in_a_newline_is_refused(release, tmp_path):
    """`demo\n` would be a second run that every listing prints as `demo`."""
    log_path = tmp_path / "log.duckdb"
    bad = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--run-id", "demo\n")
    assert bad.exit_code == 2 and bad.stderr.startswith("Error: --run-id: invalid run id 'demo\\n'"), bad.output
    assert not log_path.exists()
    # from Python too: `run_id=""` is refused, not a generated name; an output_dir may be a str
    with pytest.raises(EvisceneError, match="^invalid run id '': "):
        anyio.run(lambda: start_run(EventLog(log_path), EvalOptions(benchmark=benchmark(release), limit=1), run_id=""))
    named = EventLog(tmp_path / "named.duckdb")
    anyio.run(lambda: start_run(named, EvalOptions(benchmark=benchmark(release), limit=1), run_id="x", output_dir="runs/x"))
    assert named.sql("SELECT payload->>'output_dir' AS o FROM events WHERE type = 'run.started'")["o"].to_pylist() == [
        str(Path("runs/x").resolve())]
    # `--run-id ""` named nothing: the run was named after --output-dir, without a word
    empty = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--run-id", "",
                   "--output-dir", str(tmp_path / "runs" / "x"))
    assert empty.exit_code == 2 and empty.stderr.startswith("Error: --run-id: invalid run id ''"), empty.output
    assert not log_path.exists()


def test_two_episodes_whose_ids_map_to_one_trace_file_are_refused_not_overwritten(tmp_path):
    """Case ids `x/1` and `x_1` both make `traces/x_1.json` (the seed's safe name): the run
    directory held one trace where run_results named it for both episodes."""
    release = Path(shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1", tmp_path / "release"))
    renamed = {"demo-0001": "x/1", "demo-0002": "x_1"}
    for relative in ("runtime_input/cases.jsonl", "private/evaluation_gold.jsonl"):
        path = release / relative
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps({**r, "case_id": renamed.get(r["case_id"], r["case_id"])}) + "\n" for r in rows))
    log_path = tmp_path / "log.duckdb"
    result = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--case-id", "x/1", "--case-id", "x_1",
                    "--no-progress", "--output-dir", str(tmp_path / "runs" / "both"))
    assert result.exit_code == 2, result.output
    assert result.stderr == ("Error: cases 'x/1' and 'x_1' would share the trace file traces/x_1.json (their ids differ only "
                             "in characters a file name cannot hold): rename one, or leave one out with --case-id\n"), result.stderr
    assert not (tmp_path / "runs" / "both").exists() and not log_path.exists()  # refused before the first episode


def test_a_case_id_too_long_for_a_trace_file_name_is_refused_before_any_episode(tmp_path):
    """A 300-character id ran every episode, then its run directory could never be written
    (`File name too long`)."""
    release = Path(shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1", tmp_path / "release"))
    long_id = "x" * 300
    for relative in ("runtime_input/cases.jsonl", "private/evaluation_gold.jsonl"):
        path = release / relative
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps({**r, "case_id": long_id if r["case_id"] == "demo-0001" else r["case_id"]}) + "\n"
                                for r in rows))
    log_path = tmp_path / "log.duckdb"
    result = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "2", "--no-progress",
                    "--output-dir", str(tmp_path / "runs" / "long"))
    assert result.exit_code == 2, result.output
    episode_bytes = len(f"{long_id}.json")  # one rollout: the episode id is the case id
    assert result.stderr == (f"Error: case '{'x' * 80}'...: its trace file name would be {episode_bytes} bytes, over the 255 a "
                             "file name may hold: shorten its id, or leave it out with --case-id\n"), result.stderr
    assert not (tmp_path / "runs" / "long").exists() and not log_path.exists()


@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_timeout_that_is_not_positive_is_refused_before_any_episode(release, tmp_path, value):
    log_path = tmp_path / "log.duckdb"
    result = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--timeout", value)
    assert result.exit_code == 2 and result.stderr.endswith(f"Error: Invalid value for '--timeout': {float(value)} is not in the range x>0.\n"), result.output
    assert not log_path.exists()


@pytest.mark.parametrize("flag", ["--timeout", "--provider-outage-timeout", "--web-timeout", "--tool-cache-ttl"])
def test_nan_seconds_are_refused_before_any_episode(release, tmp_path, flag):
    """nan passes every range (its comparisons are all false): an outage was never declared."""
    log_path = tmp_path / "log.duckdb"
    result = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", flag, "nan")
    assert result.exit_code == 2 and f"Invalid value for '{flag}': 'nan' is not a finite number" in result.stderr, result.output
    assert not log_path.exists()


def test_a_run_directory_refuses_two_episodes_whose_trace_files_share_a_name(tmp_path):
    """The last guard, for runs no plan checked (merged shards, each of one of the cases)."""
    traces = [("x/1", (memoryview(b'{"a": 1}'),)), ("x_1", (memoryview(b'{"b": 2}'),))]
    with pytest.raises(EvisceneError, match=r"^episode 'x_1' and another episode of the run both have the trace file traces/x_1\.json"):
        _write_traces(tmp_path / "traces", traces)
    assert [p.read_bytes() for p in (tmp_path / "traces").iterdir()] == [b'{"a": 1}']


def run_killed_at(point: str, log_path: Path, *args: str) -> None:
    """A real `eviscene eval run` SIGKILLed at a named point (eviscene/store/faults.py)."""
    killed = subprocess.run([EVISCENE, "--db", str(log_path), "eval", "run", *args], env={**os.environ, "EVISCENE_FAULT": point},
                            cwd=log_path.parent, capture_output=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL


@pytest.mark.parametrize("point", ["lock.opened", "writer.tmp_written"])
def test_the_name_of_a_run_killed_before_its_first_commit_is_free_again(point, release, tmp_path):
    """The kill leaves the run's folder: its lock file (no holder now) and, once its writer
    opened, an empty manifest and a half-written segment. Nothing was committed, so the next
    run of that name takes it over."""
    log_path = tmp_path / "log.duckdb"
    run_killed_at(point, log_path, "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--output-dir", "runs/named")
    assert (tmp_path / "log.duckdb.live" / "named" / "writer.lock").is_file()
    again = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--run-id", "named",
                   "--no-materialize")
    assert again.exit_code == 0, again.output
    assert "run named: 1 of 1 episodes ran (completed 1); status completed" in again.stdout
    assert invoke(log_path, "log", "verify").exit_code == 0


def test_the_name_of_a_run_killed_between_its_first_blob_and_events_segments_is_free_again(release, tmp_path):
    """Killed once its first batch's blob segment was renamed into place, before its events
    segment was: no event of the run reached the disk. `log verify` said ok with 0 runs, and
    every rerun of the name was refused as "already exists", recording the blob segment in the
    manifest as it refused: the name was lost for good."""
    log_path = tmp_path / "log.duckdb"
    run_killed_at("writer.tmp_written@2", log_path, "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                  "--run-id", "named")
    folder = run_folder(log_path, "named")
    assert [name.split("-")[0] for name in sorted(os.listdir(folder))] == [".events", "blobs", "segments.jsonl", "writer.lock"]
    assert (folder / "segments.jsonl").read_bytes() == b""
    verified = invoke(log_path, "log", "verify")
    assert verified.exit_code == 1 and verified.stdout == (
        "UNFINISHED run named: unfinished: killed before its first event reached the disk (only 1 blob segment(s) did) and no "
        f"writer holds it: nothing of it resumes; its name is free for a new run, or `eviscene --db {log_path} log seal` clears "
        "its folder\n")
    again = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--run-id", "named",
                   "--no-materialize")
    assert again.exit_code == 0, again.output
    assert "run named: 1 of 1 episodes ran (completed 1); status completed" in again.stdout
    assert invoke(log_path, "log", "verify").exit_code == 0


def test_a_batch_on_disk_keeps_the_name_of_a_run_killed_before_recording_it(release, tmp_path):
    """Killed after its first segment was on disk, before the manifest line: the batch is the
    run's, not a leftover, so the name stays taken and `eval resume` finishes the run."""
    log_path = tmp_path / "log.duckdb"
    run_killed_at("writer.before_manifest", log_path, "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                  "--run-id", "named")
    again = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--run-id", "named")
    assert again.exit_code == 2 and "run 'named' already exists" in again.stderr, again.output
    resumed = invoke(log_path, "eval", "resume", "named", "--no-progress", "--no-materialize")
    assert resumed.exit_code == 0, resumed.output
    assert runs(EventLog(log_path))["named"]["status"] == "completed"


def test_a_resume_records_the_batch_a_killed_writer_left_before_planning_and_runs_no_episode_twice(release, tmp_path):
    """Killed with its second batch on disk, before the batch's manifest line: the batch holds
    episodes' starts and finishes. The resume recorded it only once its plan was made, so
    a finished episode ran again and an unfinished one started its attempt 1 twice."""
    log_path = tmp_path / "log.duckdb"
    run_killed_at("writer.before_manifest@2", log_path, "--benchmark", benchmark(release), "--limit", "3", "--no-progress",
                  "--run-id", "r", "--no-materialize")
    resumed = invoke(log_path, "eval", "resume", "r", "--no-progress", "--no-materialize")
    assert resumed.exit_code == 0, resumed.output
    counts = EventLog(log_path).sql(
        "SELECT episode_id, attempt, type, count(*) AS n FROM events WHERE type IN ('episode.started', 'episode.finished') "
        "GROUP BY ALL"
    ).to_pylist()
    assert {row["n"] for row in counts} == {1}  # no attempt started or finished twice
    assert sorted(row["episode_id"] for row in counts if row["type"] == "episode.finished") == ["demo-0001", "demo-0002", "demo-0003"]


def test_a_run_killed_after_its_last_episode_exports_every_episode_without_a_note_of_any_left_out(release, tmp_path):
    """It owes only its run.finished: the export said "note: run k has 0 unfinished episode(s),
    not in this export; … eval resume k finishes them"."""
    log_path = tmp_path / "log.duckdb"
    run_killed_at("run.episodes_ended", log_path, "--benchmark", benchmark(release), "--limit", "2", "--no-progress",
                  "--run-id", "k", "--no-materialize")
    assert runs(EventLog(log_path))["k"]["status"] == "running_or_interrupted"
    exported = invoke(log_path, "dataset", "export", "--run", "k", "--out", str(tmp_path / "ds"), "--allow-training-prohibited")
    assert exported.exit_code == 0, exported.output
    assert " of 2 candidates " in exported.stdout and exported.stderr == ""


def test_segments_whose_manifest_was_deleted_keep_their_folder_when_their_name_is_asked_for(release, tmp_path):
    """The refused claim leaves a folder that holds more than its lock as it found it: the
    segments are the evidence `log verify` names."""
    log_path = tmp_path / "log.duckdb"
    run_killed_at("run.episodes_ended", log_path, "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                  "--run-id", "named", "--no-materialize")
    folder = tmp_path / "log.duckdb.live" / "named"
    (folder / "segments.jsonl").unlink()
    kept = {path.name: path.read_bytes() for path in folder.glob("*.parquet")}
    assert kept
    again = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                   "--run-id", "named", "--no-materialize")
    assert again.exit_code == 2 and "nothing was changed" in again.stderr, again.output
    assert {path.name: path.read_bytes() for path in folder.glob("*.parquet")} == kept


def test_a_named_pipe_given_as_the_policy_is_refused_before_the_run_reads_it(release, tmp_path, deadline):
    os.mkfifo(tmp_path / "policy.json")
    with deadline(120):
        refused = invoke(tmp_path / "log.duckdb", "eval", "run", "--benchmark", benchmark(release), "--limit", "1",
                         "--no-progress", "--source-access-policy", str(tmp_path / "policy.json"))
    assert refused.exit_code == 2
    assert refused.stderr == f"Error: {tmp_path / 'policy.json'}: the source access policy is a named pipe (FIFO), not a regular file\n"


def test_an_error_while_naming_a_run_is_said_not_taken_for_a_name_in_use(release, tmp_path, monkeypatch):
    """Without --run-id or --output-dir a run takes the first free `<timestamp>_…` name; a log
    it cannot read (locked by a seal, say) is that error, not a reason to try the next name."""
    log_path = tmp_path / "log.duckdb"
    tries = []

    def locked(self, *args, **kwargs):
        tries.append(1)
        raise LogLockedError(f"log {log_path} is held for writing by pid 4242")

    monkeypatch.setattr(EventLog, "sql", locked)
    refused = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--no-materialize")
    assert refused.exit_code == 2
    assert refused.stderr == f"Error: log {log_path} is held for writing by pid 4242\n" and len(tries) == 1


def test_a_name_whose_run_is_being_written_is_refused_naming_the_writer(release, tmp_path):
    log_path = tmp_path / "log.duckdb"
    writer = RunLock(run_folder(log_path, "named") / "writer.lock", "named").acquire()  # this test process writes it
    try:
        refused = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                         "--run-id", "named")
    finally:
        writer.release()
    assert refused.exit_code == 2
    assert re.fullmatch(rf"Error: run 'named' is already being written in {re.escape(str(log_path))} by pid {os.getpid()} "
                        r"\(.*\); choose another --output-dir or --run-id\n", refused.stderr), refused.stderr
    assert not EventLog(log_path).sql("SELECT count(*) AS n FROM events")["n"][0].as_py()


def test_a_non_empty_output_dir_is_refused_before_anything_runs(release, tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = invoke(tmp_path / "log.duckdb", "eval", "run", "--benchmark", benchmark(release), "--limit", "1",
                    "--no-progress", "--output-dir", str(out))
    assert result.exit_code == 2 and "must be new or empty" in result.output
    assert not (tmp_path / "log.duckdb").exists() or not runs(EventLog(tmp_path / "log.duckdb"))


def test_an_output_dir_whose_dotdot_names_no_folder_is_refused_before_any_episode(release, tmp_path, monkeypatch):
    """`--output-dir runs/new/..`, `runs/new` missing and `runs` holding a file: the new-or-empty
    check passed (the system finds nothing at `runs/new/..`), every episode ran, then writing the
    directory failed, exit 2, blaming another write to it. The seed names a run
    `Path(output_dir).name`, here `..`, which names no run (nor folder) of its own; reading the
    path as `runs` would ignore the `new` it was given (a script's `$DIR/..`, DIR missing). So the
    path is judged as the system judges it: one whose `..` steps out of a folder that is not
    there names no folder, refused before the first episode; one whose `..` steps out of a folder
    that is there names the folder above it (`runs/other/..` is `runs`), refused as not empty."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "other").mkdir(parents=True)
    (tmp_path / "runs" / "notes.txt").write_text("mine")
    log_path = tmp_path / "log.duckdb"
    for out, said in (("runs/new/..", "output directory runs/new/..: its '..' steps out of runs/new, which does not exist, so "
                                      "the path names no folder; write it without the '..'"),
                      ("runs/other/..", "output directory must be new or empty: runs/other/..")):
        refused = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                         "--output-dir", out, "--run-id", "named")
        assert (refused.exit_code, refused.stderr) == (2, f"Error: {said}\n")
        # unnamed, the run would be named after the path's last folder, which it has not: said first, as such
        unnamed = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress", "--output-dir", out)
        assert (unnamed.exit_code, unnamed.stderr) == (2, f"Error: --output-dir {out} ends in no folder's name, which names the run: "
                                                          "name the folder, e.g. --output-dir runs/my-run (--run-id names the run otherwise)\n")
    assert not log_path.exists() or not runs(EventLog(log_path))
    assert sorted(os.listdir(tmp_path / "runs")) == ["notes.txt", "other"]


def test_an_output_dir_that_is_a_link_is_refused_before_any_episode_and_names_its_run_as_the_seed(release, tmp_path, monkeypatch):
    """`--output-dir runs/latest`, a link to the empty folder `runs/exp42`: the run was named
    `exp42`, after the link's target (the seed names it `latest`, `Path(output_dir).name`), the
    check before the run passed, every episode ran, then writing the directory failed `Not a
    directory`, exit 2; `eval resume` with the same --output-dir failed the same way. An output
    folder is put in place whole, never written through a link (`materialize --out` and `dataset
    export --out` alike): refused before anything runs; unwritten (--no-materialize), the run is `latest`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "exp42").mkdir(parents=True)
    (tmp_path / "runs" / "latest").symlink_to("exp42")
    log_path = tmp_path / "log.duckdb"
    refusal = ("Error: output directory runs/latest is a link (to exp42); an output folder is put in place whole, never through a "
               "link: name the folder itself\n")
    refused = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                     "--output-dir", "runs/latest")
    assert (refused.exit_code, refused.stderr) == (2, refusal)
    assert not log_path.exists() or not runs(EventLog(log_path))

    unwritten = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                       "--output-dir", "runs/latest", "--no-materialize")
    assert unwritten.exit_code == 0, unwritten.output
    assert set(runs(EventLog(log_path))) == {"latest"}
    for command in (["eval", "resume", "latest", "--no-progress", "--output-dir", "runs/latest"],
                    ["materialize", "latest", "--out", "runs/latest"]):
        again = invoke(log_path, *command)
        assert (again.exit_code, again.stderr) == (2, refusal), command
    assert os.readlink(tmp_path / "runs" / "latest") == "exp42" and not os.listdir(tmp_path / "runs" / "exp42")


def test_a_timeout_counts_as_an_error_and_names_its_cause(release, tmp_path):
    result = invoke(tmp_path / "log.duckdb", "eval", "run", "--benchmark", benchmark(release), "--limit", "2",
                    "--timeout", "0.001", "--no-progress", "--no-materialize", "--run-id", "too-fast")
    assert result.exit_code == 1, result.output  # the seed: a timeout carries error text, so num_errors > 0
    assert "2 of 2 episodes ran (timeout 2); status completed_with_errors" in result.output
    assert "2 episode(s) count as errors; top causes:" in result.output
    assert "  2 x episode exceeded its 0.001 s timeout" in result.output
    first = sorted(EventLog(tmp_path / "log.duckdb").sql("SELECT episode_id FROM episodes")["episode_id"].to_pylist())[0]
    assert f"details: eviscene --db {tmp_path / 'log.duckdb'} why --run too-fast -- {first}" in result.output
    why = invoke(tmp_path / "log.duckdb", "why", "--run", "too-fast", "--", first)
    assert "outcome: timeout; no verdict; attempts 1\n" in why.output, why.output  # was `verdict None (None)`
    assert runs(EventLog(tmp_path / "log.duckdb"))["too-fast"]["status"] == "completed_with_errors"


def recorded_ends(log: EventLog) -> list[dict]:
    """What each `run.finished` of run too-fast says, in order."""
    return log.sql("SELECT payload->>'status' AS status, (payload->>'num_episodes')::INT AS episodes, "
                   "(payload->>'num_errors')::INT AS errors FROM events WHERE run_id = 'too-fast' AND type = 'run.finished' ORDER BY seq").to_pylist()


class SlowToAnswer(OfflineProvider):
    """Every model call answered a second late: an episode with a shorter --timeout times out,
    whatever its perception step found cached (a retry's may take no time at all)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        await anyio.sleep(1)
        return await super().complete(request)


def test_run_finished_counts_timeouts_among_its_errors_as_every_other_count_does(release, tmp_path, monkeypatch):
    """`run.finished` counted only `termination = 'error'`: a run of 4 timeouts recorded
    `status completed_with_errors, num_errors 0` beside summary.json's 4, and so did a
    `--retry-errors` resume whose retries timed out again."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run_module, "make_provider", lambda _: SlowToAnswer())
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    first = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "2", "--rollouts-per-case", "2",
                   "--timeout", "0.2", "--no-progress", "--run-id", "too-fast")
    assert first.exit_code == 1, first.output
    assert "4 of 4 episodes ran (timeout 4); status completed_with_errors" in first.output
    assert recorded_ends(log) == [{"status": "completed_with_errors", "episodes": 4, "errors": 4}]
    retried = invoke(log_path, "eval", "resume", "too-fast", "--retry-errors", "--no-progress")
    assert retried.exit_code == 1, retried.output
    assert "4 of 4 episodes ran (timeout 4); status completed_with_errors" in retried.output
    assert recorded_ends(log) == [{"status": "completed_with_errors", "episodes": 4, "errors": 4}] * 2
    # ... as the log's views, `runs` (the viewer's row) and the run directory count them
    assert runs(log)["too-fast"]["episodes_errored"] == 4
    written = tmp_path / "runs" / "too-fast"
    assert json.loads((written / "summary.json").read_text())["num_errors"] == 4
    assert json.loads((written / "run_manifest.json").read_text())["result"]["num_errors"] == 4


def test_the_details_command_is_one_shell_word_per_id_however_the_release_spells_it(release, tmp_path):
    """A case id is the release author's text; the printed command, pasted into a shell, must
    name that id and run nothing of its own."""
    hostile = tmp_path / "hostile"
    shutil.copytree(release, hostile)
    case_id = "demo x $(touch PWNED); echo injected #"
    for name in ("runtime_input/cases.jsonl", "private/evaluation_gold.jsonl"):
        rows = [json.loads(line) for line in (hostile / name).read_text(encoding="utf-8").splitlines() if line.strip()]
        rows[0]["case_id"] = case_id
        (hostile / name).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    result = invoke(tmp_path / "log.duckdb", "eval", "run", "--benchmark", benchmark(hostile), "--limit", "1",
                    "--timeout", "0.001", "--no-progress", "--no-materialize", "--run-id", "too-fast")
    assert result.exit_code == 1, result.output
    (details,) = [line.removeprefix("details: ") for line in result.output.splitlines() if line.startswith("details: ")]
    (episode_id,) = EventLog(tmp_path / "log.duckdb").sql("SELECT episode_id FROM episodes")["episode_id"].to_pylist()
    assert case_id in episode_id
    pasted = subprocess.run(["sh", "-c", f'eviscene() {{ printf "%s\\n" "$@"; }}; {details}'], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert pasted.stdout.splitlines() == ["--db", str(tmp_path / "log.duckdb"), "why", "--run", "too-fast", "--", episode_id]
    assert not (tmp_path / "PWNED").exists()
    # ... and those words are a command that tells the episode's story.
    story = CliRunner().invoke(cli, pasted.stdout.splitlines())
    assert story.exit_code == 0 and f"episode {episode_id}" in story.output, story.output


def test_error_causes_are_the_top_three_messages_with_counts(release, tmp_path, monkeypatch):
    specs = run_module.plan_run(EvalOptions(benchmark=benchmark(release), limit=5)).specs
    by_message = {"A down": {specs[0].sampling_seed, specs[1].sampling_seed}, "B down": {specs[2].sampling_seed},
                  "C down": {specs[3].sampling_seed}, "D down": {specs[4].sampling_seed}}

    class Outage(OfflineProvider):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            for message, seeds in by_message.items():
                if request.sampling_seed in seeds:
                    raise ProviderError(message)
            return await super().complete(request)

    monkeypatch.setattr(run_module, "make_provider", lambda _: Outage())
    result = invoke(tmp_path / "log.duckdb", "eval", "run", "--benchmark", benchmark(release), "--limit", "5",
                    "--no-progress", "--no-materialize", "--run-id", "outage")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    at = lines.index("5 episode(s) count as errors; top causes:")
    assert lines[at + 1:at + 5] == [
        "  2 x ProviderError: A down", "  1 x ProviderError: B down", "  1 x ProviderError: C down", "  ... and 1 other cause(s)",
    ]


def test_a_no_op_resume_keeps_the_errors_and_retry_errors_reruns_them(release, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    specs = run_module.plan_run(EvalOptions(benchmark=benchmark(release), limit=3)).specs
    failing = specs[1]
    monkeypatch.setattr(run_module, "make_provider", lambda _: FailsOnSeeds({failing.sampling_seed}))
    first = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "3", "--no-progress",
                   "--run-id", "flaky")
    assert first.exit_code == 1
    assert runs(log)["flaky"]["status"] == "completed_with_errors"

    noop = invoke(log_path, "eval", "resume", "flaky", "--no-progress")
    assert noop.exit_code == 1, noop.output  # nothing ran, but the run still holds an errored episode
    assert "0 of 3 episodes ran (nothing left to run); status completed_with_errors" in noop.output
    assert runs(log)["flaky"]["status"] == "completed_with_errors"
    assert json.loads((tmp_path / "runs" / "flaky" / "run_manifest.json").read_text())["status"] == "completed_with_errors"

    monkeypatch.setattr(run_module, "make_provider", lambda _: OfflineProvider())  # the server is back
    retried = invoke(log_path, "eval", "resume", "flaky", "--retry-errors", "--no-progress")
    assert retried.exit_code == 0, retried.output
    assert "1 of 3 episodes ran (completed 1); status completed" in retried.output
    row = log.sql("SELECT termination, attempts, final_attempt FROM episodes WHERE episode_id = ?", [failing.episode_id]).to_pylist()
    assert row == [{"termination": "completed", "attempts": 2, "final_attempt": 2}]
    # the errored attempt stays in the log (append-only); every view reads the new one
    finishes = log.sql("SELECT attempt, payload->>'termination' AS t FROM events WHERE type = 'episode.finished' "
                       "AND episode_id = ? ORDER BY seq", [failing.episode_id]).to_pylist()
    assert finishes == [{"attempt": 1, "t": "error"}, {"attempt": 2, "t": "completed"}]
    assert runs(log)["flaky"]["status"] == "completed" and runs(log)["flaky"]["episodes_errored"] == 0
    manifest = json.loads((tmp_path / "runs" / "flaky" / "run_manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["result"]["num_errors"] == 0
    assert invoke(log_path, "log", "verify").exit_code == 0


def test_a_plain_resume_finishes_a_retry_errors_resume_that_was_killed(release, tmp_path, monkeypatch):
    """A `--retry-errors` resume killed after its first commit left a retried attempt after the
    run's earlier end. The plain resume `log verify` names ran nothing ("every episode has
    finished") and recorded no end: the run stayed unfinished, unsealed, for good."""
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    specs = run_module.plan_run(EvalOptions(benchmark=benchmark(release), limit=2)).specs
    monkeypatch.setattr(run_module, "make_provider", lambda _: FailsOnSeeds({specs[0].sampling_seed}))
    assert invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "2", "--no-progress",
                  "--no-materialize", "--run-id", "k").exit_code == 1
    killed = subprocess.run([EVISCENE, "--db", str(log_path), "eval", "resume", "k", "--retry-errors", "--no-progress", "--no-materialize"],
                            env={**os.environ, "EVISCENE_FAULT": "writer.committed@1"}, cwd=tmp_path, capture_output=True, timeout=600, check=False)
    assert killed.returncode == -signal.SIGKILL
    assert [n.run_id for n in EventLog(log_path).verify().unfinished] == ["k"]
    resumed = subprocess.run([EVISCENE, "--db", str(log_path), "eval", "resume", "k", "--no-progress", "--no-materialize"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert "0 of 2 episodes ran (nothing left to run)" in resumed.stdout, resumed.stdout + resumed.stderr
    log = EventLog(log_path)
    assert log.verify().ok
    assert log.sql("SELECT type FROM events WHERE run_id = 'k' ORDER BY seq DESC LIMIT 1")["type"].to_pylist() == ["run.finished"]
    assert not (tmp_path / "log.duckdb.live" / "k").exists()  # sealed


class InterruptedOnSeed(OfflineProvider):
    """Ctrl-C while the episode with this sampling seed waits on its first call."""

    def __init__(self, seed: int):
        super().__init__()
        self.seed = seed

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.sampling_seed == self.seed:
            os.kill(os.getpid(), signal.SIGINT)
            await anyio.sleep_forever()
        return await super().complete(request)


def interrupted_retry(release: Path, log_path: Path, monkeypatch) -> str:
    """Run `r` of three cases whose second errors, then Ctrl-C its `eval resume --retry-errors`
    in the retried attempt 2 (started, never finished); the retried episode's id."""
    specs = run_module.plan_run(EvalOptions(benchmark=benchmark(release), limit=3)).specs
    retried = specs[1]
    monkeypatch.setattr(run_module, "make_provider", lambda _: FailsOnSeeds({retried.sampling_seed}))
    assert invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "3", "--no-progress",
                  "--no-materialize", "--run-id", "r").exit_code == 1
    monkeypatch.setattr(run_module, "make_provider", lambda _: InterruptedOnSeed(retried.sampling_seed))
    stopped = invoke(log_path, "eval", "resume", "r", "--retry-errors", "--no-progress", "--no-materialize")
    assert stopped.exit_code == 130 and stopped.stderr == f"interrupted; `eviscene --db {log_path} eval resume r` finishes it\n"
    monkeypatch.setattr(run_module, "make_provider", lambda _: OfflineProvider())
    return retried.episode_id


def test_the_resume_named_after_a_ctrl_c_during_a_retry_runs_the_retry_again(release, tmp_path, monkeypatch):
    """Ctrl-C during `eval resume --retry-errors` left the retried attempt 2 started, never
    finished. The `eval resume` it named counted the episode finished by its errored attempt 1:
    it ran nothing, ended the run completed_with_errors again, and attempt 2 dangled in a run
    `runs` and `log verify` called complete. An episode is now as its latest attempt left it."""
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    retried = interrupted_retry(release, log_path, monkeypatch)
    # the retry is unfinished, as `log verify` says, not the errored attempt 1's result
    assert (runs(log)["r"]["status"], runs(log)["r"]["episodes_finished"], runs(log)["r"]["episodes_errored"]) == ("incomplete", 2, 0)
    assert [note.run_id for note in log.verify().unfinished] == ["r"]

    resumed = invoke(log_path, "eval", "resume", "r", "--no-progress", "--no-materialize")  # as named
    assert resumed.exit_code == 0, resumed.output
    assert "1 of 3 episodes ran (completed 1); status completed" in resumed.output
    attempts = log.sql("SELECT attempt, type FROM events WHERE episode_id = ? AND type IN ('episode.started', 'episode.finished') "
                       "ORDER BY seq", [retried]).to_pylist()
    assert [(row["attempt"], row["type"]) for row in attempts] == [
        (1, "episode.started"), (1, "episode.finished"), (2, "episode.started"), (3, "episode.started"), (3, "episode.finished")]
    row = log.sql("SELECT termination, attempts, final_attempt FROM episodes WHERE episode_id = ?", [retried]).to_pylist()
    assert row == [{"termination": "completed", "attempts": 3, "final_attempt": 3}]
    assert (runs(log)["r"]["status"], runs(log)["r"]["episodes_finished"], runs(log)["r"]["episodes_errored"]) == ("completed", 3, 0)
    assert log.verify().ok


def test_a_retry_the_log_shows_only_under_the_run_s_lock_is_held_to_the_run_s_code(release, tmp_path, monkeypatch):
    """A retry killed between its segment and that segment's manifest line: before the run's
    lock the episode looks finished (its errored attempt 1), so a resume has nothing to check
    the code for; the retry recorded under the lock must still not run by other code."""
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    monkeypatch.setattr(run_module, "git_commit", lambda: "a" * 40)  # the run's commit
    monkeypatch.setattr(preflight, "running_code_commit", lambda: "a" * 40)
    interrupted_retry(release, log_path, monkeypatch)
    (run_folder(log_path, "r") / MANIFEST).write_text("")  # the retry's segments reached the disk, never their lines
    assert runs(log)["r"]["status"] == "completed_with_errors"

    monkeypatch.setattr(preflight, "running_code_commit", lambda: "b" * 40)
    refused = invoke(log_path, "eval", "resume", "r", "--no-progress", "--no-materialize")
    assert refused.exit_code == 2 and refused.stderr == (
        "Error: run r was started by EviScene at commit aaaaaaaaaaaa, and this is bbbbbbbbbbbb: its remaining episodes "
        "would run other code under the first commit's name; resume with that commit checked out, or start a new run\n")
    assert runs(log)["r"]["status"] == "incomplete"  # the retry, recorded now

    monkeypatch.setattr(preflight, "running_code_commit", lambda: "a" * 40)
    resumed = invoke(log_path, "eval", "resume", "r", "--no-progress", "--no-materialize")
    assert resumed.exit_code == 0 and "1 of 3 episodes ran (completed 1); status completed" in resumed.output, resumed.output


def test_resume_checks_its_output_dir_before_the_first_episode_and_replaces_only_its_own(release, tmp_path, monkeypatch):
    """A taken --output-dir is refused before any episode runs again; the run's own earlier
    directory is replaced whether named by --output-dir or by default."""
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    specs = run_module.plan_run(EvalOptions(benchmark=benchmark(release), limit=2)).specs
    monkeypatch.setattr(run_module, "make_provider", lambda _: FailsOnSeeds({specs[0].sampling_seed}))
    first = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "2", "--no-progress",
                   "--output-dir", "runs/int")
    assert first.exit_code == 1, first.output
    monkeypatch.setattr(run_module, "make_provider", lambda _: OfflineProvider())

    def attempts() -> list[int]:
        return log.sql("SELECT attempt FROM events WHERE type = 'episode.started' ORDER BY seq")["attempt"].to_pylist()

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    refused = invoke(log_path, "eval", "resume", "int", "--retry-errors", "--no-progress", "--output-dir", str(taken))
    assert refused.exit_code == 2 and refused.stderr == f"Error: output directory must be new or empty: {taken}\n"
    assert attempts() == [1, 1] and [p.name for p in taken.iterdir()] == ["notes.txt"]

    # Its own earlier directory, but holding a file the run did not write: that would go with it.
    (tmp_path / "runs" / "int" / "notes.txt").write_text("mine")
    kept = invoke(log_path, "eval", "resume", "int", "--retry-errors", "--no-progress", "--output-dir", "runs/int")
    assert kept.exit_code == 2 and kept.stderr == (
        "Error: --output-dir runs/int is run int's earlier directory, and it also holds what a run directory does not "
        "(notes.txt): writing it again would delete that; move it out, or name another --output-dir\n")
    assert attempts() == [1, 1] and (tmp_path / "runs" / "int" / "notes.txt").read_text() == "mine"
    # A manifest naming the run, written by hand into a folder of one's own, is no licence either,
    # whatever it lists as the run's files.
    (taken / "run_manifest.json").write_text('{"run_id": "int", "artifacts": {"notes": "notes.txt"}}')
    assert invoke(log_path, "eval", "resume", "int", "--no-progress", "--output-dir", str(taken)).exit_code == 2
    assert sorted(p.name for p in taken.iterdir()) == ["notes.txt", "run_manifest.json"]

    (tmp_path / "runs" / "int" / "notes.txt").unlink()
    named = invoke(log_path, "eval", "resume", "int", "--retry-errors", "--no-progress", "--output-dir", "runs/int")
    assert named.exit_code == 0, named.output
    assert attempts() == [1, 1, 2]
    assert json.loads((tmp_path / "runs" / "int" / "run_manifest.json").read_text())["status"] == "completed"


def test_a_resume_never_replaces_a_run_directory_that_holds_the_log(release, tmp_path, monkeypatch):
    """A log kept in its run's directory (`--db runs/kept/log.duckdb`): resuming into that
    directory replaced it, the log with it, and said `run directory: runs/kept`, exit 0."""
    monkeypatch.chdir(tmp_path)
    first = invoke(tmp_path / "log.duckdb", "eval", "run", "--benchmark", benchmark(release), "--limit", "1",
                   "--no-progress", "--output-dir", "runs/kept")
    assert first.exit_code == 0, first.output
    kept = tmp_path / "runs" / "kept"
    for path in tmp_path.glob("log.duckdb*"):
        path.rename(kept / path.name)
    before = sorted(str(p.relative_to(kept)) for p in kept.rglob("*"))
    resumed = invoke(kept / "log.duckdb", "eval", "resume", "kept", "--no-progress", "--output-dir", "runs/kept")
    assert (resumed.exit_code, resumed.stderr) == (
        2, f"Error: --output-dir runs/kept: holds the log {kept / 'log.duckdb'}; a folder holding the log is never replaced\n")
    assert sorted(str(p.relative_to(kept)) for p in kept.rglob("*")) == before
    assert runs(EventLog(kept / "log.duckdb"))["kept"]["status"] == "completed"


def test_materialize_refuses_a_stopped_run_unless_its_unfinished_episodes_are_to_be_errors(release, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    specs = run_module.plan_run(EvalOptions(benchmark=benchmark(release), limit=3)).specs
    monkeypatch.setattr(run_module, "make_provider", lambda _: DownFromSeed(specs[1].sampling_seed))
    stopped = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "3", "--concurrency", "1",
                     "--no-progress", "--run-id", "cut")
    assert stopped.exit_code == 1 and "1 of 3 episodes ran (completed 1, 2 unfinished)" in stopped.stdout, stopped.output

    refused = invoke(log_path, "materialize", "cut", "--out", "runs/cut")
    assert (refused.exit_code, refused.stderr) == (2, (
        f"Error: run cut has 2 unfinished episode(s): `eviscene --db {log_path} eval resume cut` finishes them "
        "(--unfinished-as-errors writes them as error rows now)\n"
    ))
    # a dataset export takes the episodes it finished, and says which it leaves out
    exported = invoke(log_path, "dataset", "export", "--run", "cut", "--out", "datasets/cut", "--allow-training-prohibited")
    assert exported.exit_code == 0, exported.output
    assert " of 1 candidates " in exported.stdout  # the one finished episode
    assert exported.stderr == (f"note: run cut has 2 unfinished episode(s), not in this export; "
                               f"`eviscene --db {log_path} eval resume cut` finishes them\n")
    assert not (tmp_path / "runs").exists()
    # While a writer holds the run, it is not stopped: the resume it was offered would be refused.
    lock = RunLock(tmp_path / "log.duckdb.live" / "cut" / "writer.lock", "cut").acquire()
    try:
        writing = invoke(log_path, "materialize", "cut", "--out", "runs/cut")
    finally:
        lock.release()
    assert writing.exit_code == 2 and writing.stderr.startswith(f"Error: run cut is still being written by pid {os.getpid()} ")
    assert writing.stderr.endswith("(2 episode(s) to go): materialize it when it ends (--unfinished-as-errors writes them as error rows now)\n")
    assert not (tmp_path / "runs").exists()

    asked = invoke(log_path, "materialize", "cut", "--out", "runs/cut", "--unfinished-as-errors")
    assert asked.exit_code == 0, asked.output
    metrics = [json.loads(line) for line in (tmp_path / "runs" / "cut" / "process_metrics.jsonl").read_text().splitlines()]
    stand_ins = [m["case_id"] for m in metrics if m["first_error"] == {"error": "canonical trace is missing"}]  # the seed's keys
    assert len(metrics) == 3 and sorted(stand_ins) == sorted(spec.case_id for spec in specs[1:])

    monkeypatch.setattr(run_module, "make_provider", lambda _: OfflineProvider())  # the server is back
    assert invoke(log_path, "eval", "resume", "cut", "--no-progress", "--no-materialize").exit_code == 0
    finished = invoke(log_path, "materialize", "cut", "--out", "runs/cut-finished")
    assert finished.exit_code == 0, finished.output


def test_the_command_of_a_stopped_run_run_again_is_pointed_to_eval_resume(release, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    specs = run_module.plan_run(EvalOptions(benchmark=benchmark(release), limit=2)).specs
    monkeypatch.setattr(run_module, "make_provider", lambda _: DownFromSeed(specs[1].sampling_seed))
    command = ["eval", "run", "--benchmark", benchmark(release), "--limit", "2", "--concurrency", "1", "--no-progress",
               "--output-dir", "runs/cut"]
    assert invoke(log_path, *command).exit_code == 1

    again = invoke(log_path, *command)
    assert (again.exit_code, again.stderr) == (2, (
        f"Error: run 'cut' already exists in {log_path} with 1 unfinished episode(s): "
        f"`eviscene --db {log_path} eval resume cut` finishes them; or choose another --output-dir or --run-id\n"
    ))


def test_resume_finds_a_moved_release_by_id_and_cases_sha256(release, tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    moved = tmp_path / "moved" / "demo"
    shutil.copytree(release, moved)
    options = EvalOptions(benchmark=benchmark(moved), limit=2)
    anyio.run(lambda: start_run(log, options, run_id="moving"))
    shutil.rmtree(moved)
    gone = invoke(tmp_path / "log.duckdb", "eval", "resume", "moving", "--no-progress", "--no-materialize")
    assert gone.exit_code == 2 and "--benchmark" in gone.output and "Traceback" not in gone.output

    found = invoke(tmp_path / "log.duckdb", "eval", "resume", "moving", "--benchmark", benchmark(release),
                   "--no-progress", "--output-dir", str(tmp_path / "out"))
    assert found.exit_code == 0, found.output
    assert (tmp_path / "out" / "run_manifest.json").is_file()

    edited = tmp_path / "edited" / "demo"
    shutil.copytree(release, edited)
    cases = edited / "runtime_input" / "cases.jsonl"
    cases.write_text(cases.read_text().replace("\n", "\n\n", 1))
    refused = invoke(tmp_path / "log.duckdb", "eval", "resume", "moving", "--benchmark", str(cases), "--no-progress")
    assert refused.exit_code == 2 and "sha256" in refused.output

    other = tmp_path / "other" / "demo"
    shutil.copytree(release, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["release_id"] = "someone-else-v1"
    (other / "manifest.json").write_text(json.dumps(manifest))
    wrong = invoke(tmp_path / "log.duckdb", "eval", "resume", "moving", "--benchmark", benchmark(other), "--no-progress")
    assert wrong.exit_code == 2 and "someone-else-v1" in wrong.output


def test_a_crashed_run_is_failed_with_its_error_in_the_manifest(release, tmp_path, monkeypatch):
    def full_disk(name: str) -> None:  # the crash comes after the episodes
        if name == "run.episodes_ended":
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_module, "checkpoint", full_disk)
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    options = EvalOptions(benchmark=benchmark(release), limit=1)
    with pytest.raises(OSError):
        anyio.run(lambda: start_run(log, options, run_id="crashed"))
    assert runs(log)["crashed"]["status"] == "failed"
    finished = log.sql("SELECT payload->>'status' AS status, payload->>'error' AS error FROM events "
                       "WHERE type = 'run.finished' AND run_id = 'crashed'").to_pylist()
    assert len(finished) == 1 and finished[0]["status"] == "failed"
    assert finished[0]["error"] == "OSError: [Errno 28] No space left on device"
    out = tmp_path / "crashed-dir"
    assert invoke(log_path, "materialize", "crashed", "--out", str(out)).exit_code == 0
    manifest = json.loads((out / "run_manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["error"] == finished[0]["error"]


def test_manifest_records_the_decision_policy_and_ocr_cache_version(release, tmp_path, monkeypatch):
    log = EventLog(tmp_path / "log.duckdb")
    monkeypatch.setenv("OCR_BACKEND", "RapidOCR")
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=benchmark(release), limit=1), run_id="ocr-default"))
    monkeypatch.setenv("OCR_CACHE_VERSION", "ocr-2026-12")
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=benchmark(release), limit=1), run_id="ocr-bumped"))
    agent = {
        row["run_id"]: json.loads(row["agent"])
        for row in log.sql("SELECT run_id, payload->'agent' AS agent FROM events WHERE type = 'run.started'").to_pylist()
    }
    assert agent["ocr-default"]["ocr_cache_version"] == "rapidocr-v3"
    assert agent["ocr-bumped"]["ocr_cache_version"] == "ocr-2026-12"
    assert agent["ocr-default"]["decision_policy_version"] == "unified-react-v1"
    # a new OCR cache version never reuses perception reports made under the old one; the same one does
    monkeypatch.delenv("OCR_CACHE_VERSION")
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=benchmark(release), limit=1), run_id="ocr-same"))
    hits = {
        row["run_id"]: row["hit"]
        for row in log.sql("SELECT run_id, bool_and((payload->>'cache_hit')::BOOLEAN) AS hit FROM events "
                           "WHERE type = 'perception.reported' GROUP BY run_id").to_pylist()
    }
    assert hits == {"ocr-default": False, "ocr-bumped": False, "ocr-same": True}
    monkeypatch.setenv("OCR_BACKEND", "baidu")
    result = invoke(tmp_path / "log.duckdb", "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress")
    assert result.exit_code == 2 and "OCR_BACKEND='baidu'" in result.output


def test_gold_with_crlf_and_lines_of_python_white_space_scores_as_its_plain_twin(release, tmp_path):
    """Gold the strict reader accepts (CRLF ends, a line of a form feed,
    a no-break space or a lone CR) is read by the scoring views the same way (DuckDB's trim()
    takes only spaces: such a line failed the JSON cast)."""
    odd = tmp_path / "odd" / "demo"
    shutil.copytree(release, odd)
    gold_file = odd / "private" / "evaluation_gold.jsonl"
    lines = gold_file.read_text(encoding="utf-8").splitlines()
    spaced = [part for line in lines for part in (line, "\x0c", "\u00a0", "\r")]
    gold_file.write_bytes("".join(f"{line}\r\n" for line in spaced).encode("utf-8"))
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=benchmark(odd), limit=3), run_id="odd"))
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=benchmark(release), limit=3), run_id="plain"))
    scored = log.sql("SELECT run_id, case_id, label FROM gold_labels ORDER BY case_id").to_pylist()
    gold = [json.loads(line) for line in lines if line.strip()]
    expected = [(row["case_id"], row["label"]) for row in sorted(gold, key=lambda row: row["case_id"])]
    for run_id in ("odd", "plain"):
        assert [(r["case_id"], r["label"]) for r in scored if r["run_id"] == run_id] == expected
    correct = {row["run_id"]: row["n"] for row in log.sql(
        "SELECT run_id, count(*) FILTER (WHERE result_correct) AS n FROM process_metrics GROUP BY run_id").to_pylist()}
    assert correct["odd"] == correct["plain"] >= 2


def test_cases_and_gold_as_json_lists_score_as_their_jsonl_twins(release, tmp_path):
    """The seed reads a benchmark or gold file not named *.jsonl as one JSON list of rows."""
    listed = tmp_path / "listed" / "demo"
    shutil.copytree(release, listed)
    for jsonl, json_name in (("runtime_input/cases.jsonl", "runtime_input/cases.json"),
                             ("private/evaluation_gold.jsonl", "private/evaluation_gold.json")):
        rows = [json.loads(line) for line in (listed / jsonl).read_text().splitlines() if line.strip()]
        (listed / jsonl).unlink()
        (listed / json_name).write_text(json.dumps(rows, indent=1))
    manifest = json.loads((listed / "manifest.json").read_text())
    manifest["artifacts"]["evaluation_gold"] = "private/evaluation_gold.json"
    (listed / "manifest.json").write_text(json.dumps(manifest))
    log = EventLog(tmp_path / "log.duckdb")
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=str(listed / "runtime_input" / "cases.json"), limit=3), run_id="listed"))
    anyio.run(lambda: start_run(log, EvalOptions(benchmark=benchmark(release), limit=3), run_id="lines"))
    scored = log.sql("SELECT run_id, case_id, label FROM gold_labels ORDER BY case_id, run_id").to_pylist()
    gold = [json.loads(line) for line in (release / "private" / "evaluation_gold.jsonl").read_text().splitlines() if line.strip()]
    expected = sorted({row["case_id"]: row["label"] for row in gold}.items())
    assert [(r["case_id"], r["label"]) for r in scored if r["run_id"] == "listed"] == expected
    assert [(r["case_id"], r["label"]) for r in scored if r["run_id"] == "lines"] == expected
    correct = {row["run_id"]: row["n"] for row in log.sql(
        "SELECT run_id, count(*) FILTER (WHERE result_correct) AS n FROM process_metrics GROUP BY run_id").to_pylist()}
    assert correct["listed"] == correct["lines"] and correct["lines"] >= 2

    bad = tmp_path / "bad" / "demo"
    shutil.copytree(listed, bad)
    (bad / "runtime_input" / "cases.json").write_text('{"case_id": "not a list"}')
    result = invoke(tmp_path / "log.duckdb", "eval", "run", "--benchmark", str(bad / "runtime_input" / "cases.json"), "--no-progress")
    assert result.exit_code == 2 and "must be a JSON list of rows or a .jsonl file, got an object" in result.output


def test_an_error_inside_the_episodes_task_groups_fails_the_run_in_one_line(release, tmp_path, monkeypatch):
    """An EvisceneError raised among the episodes (the Ray workers that could not start) came
    out wrapped in the task groups' ExceptionGroups: a 70-line traceback, exit 1."""
    async def unreadable(*args, **kwargs):
        raise EvisceneError("the Ray workers could not start: The actor is dead")

    monkeypatch.setattr(run_module, "import_scoring_files", unreadable)
    log_path = tmp_path / "log.duckdb"
    result = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                    "--no-materialize", "--run-id", "r")
    assert (result.exit_code, result.stderr) == (2, "Error: the Ray workers could not start: The actor is dead\n")
    finished = EventLog(log_path).sql("SELECT payload->>'status' AS status, payload->>'error' AS error FROM events "
                                      "WHERE type = 'run.finished'").to_pylist()
    assert finished == [{"status": "failed", "error": "EvisceneError: the Ray workers could not start: The actor is dead"}]


def test_a_resume_replaces_the_run_directory_another_resume_of_the_run_wrote_meanwhile(release, tmp_path, monkeypatch):
    """Two resumes at once: the second waits for the first to end, which writes `runs/r`; then
    the second, having found no directory there as it started, refused the run's own: "output
    directory must be new or empty", exit 2."""
    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    first = invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                   "--run-id", "r", "--no-materialize")
    assert first.exit_code == 0, first.output
    from eviscene.cli import eval as eval_cli

    resume_run = eval_cli.resume_run

    async def resumed_while_the_other_wrote(log, run_id, **options):
        summary = await resume_run(log, run_id, **options)
        materialize_run(log, run_id, tmp_path / "runs" / "r")  # the first resume, ending as this one waited
        return summary

    monkeypatch.setattr(eval_cli, "resume_run", resumed_while_the_other_wrote)
    second = invoke(log_path, "eval", "resume", "r", "--no-progress")
    assert second.exit_code == 0, second.output
    assert "run directory: runs/r" in second.stdout and json.loads((tmp_path / "runs" / "r" / "run_manifest.json").read_text())["run_id"] == "r"


def paused_at(point: str, log_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    """A real `eviscene … args` held at the named fault point (EVISCENE_PAUSE, eviscene/store/faults.py)
    until `go` exists in the returned folder."""
    barrier = log_path.parent / f"barrier-{point}"
    barrier.mkdir()
    process = subprocess.Popen([EVISCENE, "--db", str(log_path), *args], env={**os.environ, "EVISCENE_PAUSE": f"{point}:{barrier}"},
                               cwd=log_path.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (barrier / "reached").exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{point} never reached"
        time.sleep(0.02)
    return process, barrier


def ended(process: subprocess.Popen, barrier: Path) -> subprocess.CompletedProcess:
    (barrier / "go").touch()
    out, err = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# where `eval run` waits while `eval resume r` runs: past its seal (the run's lock gone), before its directory is
# written; or its directory written, not yet renamed in; or it writes its directory while the resume's waits to be renamed in
RESUME_IN_THE_GAP = {"resume written first": ("seal.removed", None), "resume renamed in first": ("staging.filled", None),
                     "run renamed in first": ("seal.removed", "staging.filled")}


@pytest.mark.parametrize("run_waits_at, resume_waits_at", RESUME_IN_THE_GAP.values(), ids=RESUME_IN_THE_GAP)
def test_a_resume_between_a_runs_seal_and_its_run_directory_leaves_both_exit_0_and_the_directory_whole(
        run_waits_at, resume_waits_at, release, tmp_path):
    """`eval run` lets the run's lock go at its seal and writes the run directory after: an `eval
    resume` of the run in that gap (nothing left to run) wrote the directory, and the `eval run`
    then printed its summary and `Error: output directory must be new or empty: runs/r` (or "was
    filled while this write ran"), exit 2; a resume whose write ended second said the same. Now
    either replaces the run's own directory put there meanwhile, written again from the log."""
    log_path = tmp_path / "log.duckdb"
    run = paused_at(run_waits_at, log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                    "--output-dir", "runs/r")
    if resume_waits_at is None:
        resumed = subprocess.run([EVISCENE, "--db", str(log_path), "eval", "resume", "r", "--no-progress"], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=300, check=False)
        ran = ended(*run)
    else:
        resume = paused_at(resume_waits_at, log_path, "eval", "resume", "r", "--no-progress")
        ran = ended(*run)
        resumed = ended(*resume)
    # 1 episode: a row in each of the 10 record files, and its trace
    assert (ran.returncode, ran.stderr) == (0, "") and ran.stdout.endswith("run directory: runs/r (11 rows and traces)\n"), ran
    assert (resumed.returncode, resumed.stderr) == (0, ""), resumed
    assert resumed.stdout.startswith("run r: 0 of 1 episodes ran (nothing left to run); status completed\n")
    assert resumed.stdout.endswith("run directory: runs/r (11 rows and traces)\n")
    assert sorted(os.listdir(tmp_path / "runs")) == ["r"]  # no temporary folder left beside it
    written = materialize_run(EventLog(log_path), "r", tmp_path / "clean")
    assert sum(written.values()) == 11 and files_of(tmp_path / "runs" / "r") == files_of(tmp_path / "clean")


def test_a_run_directory_written_in_the_gap_is_still_not_replaced_while_it_holds_a_file_of_someones(release, tmp_path):
    log_path = tmp_path / "log.duckdb"
    run = paused_at("seal.removed", log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                    "--output-dir", "runs/r")
    materialize_run(EventLog(log_path), "r", tmp_path / "runs" / "r")  # as a resume of the run does
    (tmp_path / "runs" / "r" / "notes.txt").write_text("mine")
    ran = ended(*run)
    assert (ran.returncode, ran.stderr) == (2, (
        "Error: --output-dir runs/r is run r's earlier directory, and it also holds what a run directory does not "
        "(notes.txt): writing it again would delete that; move it out, or name another --output-dir\n"))
    assert (tmp_path / "runs" / "r" / "notes.txt").read_text() == "mine"


def test_an_archive_held_for_writing_as_a_run_ends_leaves_the_run_completed_and_names_what_writes_its_directory(
        release, tmp_path, monkeypatch):
    """When the episodes had ended, the run read its error count from the log inside the block
    that records a crash: another process holding the archive for writing past the reader's
    wait (a `log merge`, a seal, a notebook's `duckdb.connect`) made that read fail, and the
    run whose episodes all finished was recorded `failed`, exit 2, no run directory. Now the
    run ends `completed`, says what it could not read and which command writes its directory,
    and that command does once the archive is free."""
    from eviscene.store import snapshot

    monkeypatch.chdir(tmp_path)
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    assert invoke(log_path, "eval", "run", "--benchmark", benchmark(release), "--limit", "1", "--no-progress",
                  "--output-dir", "runs/first").exit_code == 0  # the archive exists, sealed
    monkeypatch.setattr(snapshot, "LOCK_WAIT_SECONDS", 0.2)
    holder: list[subprocess.Popen] = []

    def hold_the_archive(name: str) -> None:  # another process opens it read-write as the episodes end
        if name == "run.episodes_ended":
            holder.append(subprocess.Popen(
                [sys.executable, "-c", f"import duckdb, sys, time; c = duckdb.connect({str(log_path)!r}); print('held', flush=True); time.sleep(600)"],
                stdout=subprocess.PIPE, text=True))
            assert holder[0].stdout.readline() == "held\n"

    monkeypatch.setattr(run_module, "checkpoint", hold_the_archive)
    try:
        ended = CliRunner().invoke(cli, ["--db", str(log_path), "eval", "run", "--benchmark", benchmark(release),
                                         "--limit", "2", "--no-progress", "--output-dir", "runs/q"])
    finally:
        for process in holder:
            process.kill()
            process.wait()
    held = f"log {log_path} is held for writing by pid {holder[0].pid} (python -c)"
    assert ended.exit_code == 0, (ended.stdout, ended.stderr)
    assert ended.stdout == "run q: 2 of 2 episodes ran (completed 2); status completed\n"
    assert ended.stderr.splitlines() == [
        f"the run's errors were counted from what this process saw ({held}); `eviscene --db {log_path} runs` counts them from the log",
        f"run not sealed yet ({held}); `eviscene --db {log_path} log seal` catches up later",
        f"the run's status is as this process saw it end ({held}); `eviscene --db {log_path} runs` reads it from the log",
        f"no accuracy or error causes shown: {held}",
        f"no run directory written ({held}); `eviscene --db {log_path} materialize q --out runs/q` writes it",
    ]
    finished = log.sql("SELECT payload->>'status' AS status, payload->>'num_episodes' AS n FROM events "
                       "WHERE run_id = 'q' AND type = 'run.finished'").to_pylist()
    assert finished == [{"status": "completed", "n": "2"}]
    assert (runs(log)["q"]["status"], runs(log)["q"]["episodes_finished"]) == ("completed", 2)
    assert not (tmp_path / "runs" / "q").exists()
    assert invoke(log_path, "materialize", "q", "--out", "runs/q").exit_code == 0  # as printed, the archive free
    assert json.loads((tmp_path / "runs" / "q" / "run_manifest.json").read_text())["status"] == "completed"
    assert invoke(log_path, "log", "seal").output == "sealed 1 run(s): q\n"
    assert log.verify().ok
