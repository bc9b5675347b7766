"""A run is scored and audited by the gold, protocols and source-access policy it read when it
started: `run.started` pins their sha256, the run's end imports those very bytes once, and
`eval resume` refuses a release whose file differs, leaving the log as it was. Real offline
runs on a few cases of a copy of the bundled release."""

import hashlib
import json
import shutil
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from pydantic import Field

from eviscene.agent.provider import ModelRequest, ModelResponse, ProviderOutage
from eviscene.cli.main import cli
from eviscene.eval import run as run_module
from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.events import RunStarted
from eviscene.log import EventLog
from eviscene.providers import OfflineProvider

BUNDLED = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1"
VISITED_DOMAIN = "globalwire.example"  # the offline agent visits it in demo-0002 and demo-0003


def copy_release(target: Path) -> Path:
    return Path(shutil.copytree(BUNDLED, target))


def cases(release: Path) -> str:
    return str(release / "runtime_input" / "cases.jsonl")


def gold_file(release: Path) -> Path:
    return release / "private" / "evaluation_gold.jsonl"


def policy_file(release: Path) -> Path:
    return release / "private" / "source_access_policy.json"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def invoke(log_path: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(log_path), *args])


def invoke_eval(log_path: Path, *args: str):
    return invoke(log_path, "eval", *args, "--no-progress", "--no-materialize")


def flip_labels(gold: Path, case_ids: set[str]) -> None:
    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        if row["case_id"] in case_ids:
            row["label"] = "manipulated" if row["label"] != "manipulated" else "authentic"
    gold.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def block_visited_domain(policy: Path) -> None:
    body = json.loads(policy.read_text(encoding="utf-8"))
    body["blocked_domains"].append(VISITED_DOMAIN)
    policy.write_text(json.dumps(body), encoding="utf-8")


def every_event(log: EventLog) -> list[dict]:
    return log.sql("SELECT run_id, seq, hash FROM events ORDER BY run_id, seq").to_pylist()


def imports_by_kind(log: EventLog, run_id: str) -> dict[str, list[str]]:
    rows = log.sql("SELECT payload->>'kind' AS kind, list(payload->>'sha256' ORDER BY seq) AS digests FROM events "
                   "WHERE run_id = ? AND type = 'artifact.imported' GROUP BY 1", [run_id]).to_pylist()
    return {row["kind"]: row["digests"] for row in rows}


def correct_answers(log: EventLog, run_id: str) -> int:
    return log.sql("SELECT count(*) FILTER (WHERE result_correct) AS n FROM process_metrics WHERE run_id = ?",
                   [run_id])["n"][0].as_py()


def policy_violations(log: EventLog, run_id: str) -> int:
    return log.sql("SELECT count(*) AS n FROM trace_audit_failures WHERE run_id = ? AND code = 'source_policy_violation'",
                   [run_id])["n"][0].as_py()


@pytest.mark.parametrize(("kind", "path_of", "edit"), [
    ("evaluation_gold", gold_file, lambda path: flip_labels(path, {"demo-0001", "demo-0002"})),
    ("source_access_policy", policy_file, block_visited_domain),
])
def test_a_resume_over_an_edited_gold_or_policy_is_refused_and_the_log_is_unchanged(tmp_path, kind, path_of, edit):
    release = copy_release(tmp_path / "demo")
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    ran = invoke_eval(log_path, "run", "--benchmark", cases(release), "--limit", "3", "--run-id", "pp")
    assert ran.exit_code == 0, ran.output
    assert correct_answers(log, "pp") == 3 and policy_violations(log, "pp") == 0
    edited = path_of(release)
    pinned = sha256(edited)
    edit(edited)
    before = every_event(log)

    refused = invoke_eval(log_path, "resume", "pp")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr == (f"Error: {edited} differs from the {kind} of run pp (sha256 {pinned}; "
                              f"now {sha256(edited)}); resume refused\n")
    assert every_event(log) == before
    assert correct_answers(log, "pp") == 3 and policy_violations(log, "pp") == 0


def test_a_finished_run_resumed_with_nothing_to_do_adds_no_events(tmp_path):
    """Nor from a moved copy of its release (the artifacts' paths differ, their bytes do not)."""
    release = copy_release(tmp_path / "demo")
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    assert invoke_eval(log_path, "run", "--benchmark", cases(release), "--limit", "3", "--run-id", "done").exit_code == 0
    before = every_event(log)
    again = invoke_eval(log_path, "resume", "done")
    assert again.exit_code == 0 and "0 of 3 episodes ran (nothing left to run); status completed" in again.output
    moved = copy_release(tmp_path / "moved" / "demo")
    from_moved = invoke_eval(log_path, "resume", "done", "--benchmark", cases(moved))
    assert from_moved.exit_code == 0, from_moved.output
    assert every_event(log) == before
    assert imports_by_kind(log, "done") == {
        "evaluation_gold": [sha256(gold_file(release))],
        "classification_protocol": [sha256(release / "private" / "classification_protocol.json")],
        "process_reference_protocol": [sha256(release / "private" / "process_reference_protocol.json")],
        "source_access_policy": [sha256(policy_file(release))],
    }
    assert invoke(log_path, "log", "verify").exit_code == 0


class EditsGoldAndPolicyOnceAnEpisodeFinished:
    """Flips every gold label and blocks a domain the agent visits, mid-run."""

    def __init__(self, release: Path):
        self.release, self.edited = release, False

    def planned(self, run_id: str, episodes: int) -> None: ...

    def finished(self, spec, finished) -> None:
        if not self.edited:
            flip_labels(gold_file(self.release), {"demo-0001", "demo-0002", "demo-0003"})
            block_visited_domain(policy_file(self.release))
            self.edited = True


def test_a_run_whose_gold_and_policy_are_edited_while_it_runs_keeps_the_bytes_it_started_with(tmp_path):
    release = copy_release(tmp_path / "demo")
    gold, policy = gold_file(release), policy_file(release)
    started_with = {"gold": gold.read_bytes(), "policy": policy.read_bytes()}
    gold_sha, policy_sha = sha256(gold), sha256(policy)
    labels = {row["case_id"]: row["label"] for row in map(json.loads, started_with["gold"].decode().splitlines())}
    log = EventLog(tmp_path / "log.duckdb")
    options = EvalOptions(benchmark=cases(release), limit=3, concurrency=1)
    summary = anyio.run(lambda: start_run(log, options, observer=EditsGoldAndPolicyOnceAnEpisodeFinished(release),
                                          run_id="mid"))

    scored = log.sql("SELECT case_id, label FROM gold_labels WHERE run_id = 'mid' AND case_id IN ('demo-0001', 'demo-0002', 'demo-0003') "
                     "ORDER BY case_id").to_pylist()
    assert scored == [{"case_id": case_id, "label": labels[case_id]} for case_id in ("demo-0001", "demo-0002", "demo-0003")]
    assert correct_answers(log, "mid") == 3  # the offline agent answers each demo case right, by the gold it ran with
    assert policy_violations(log, "mid") == 0  # its tools allowed VISITED_DOMAIN
    imported = log.sql("SELECT e.payload->>'kind' AS kind, b.content FROM events e JOIN blobs b ON b.sha256 = e.payload->>'blob_sha256' "
                       "WHERE e.type = 'artifact.imported' AND e.payload->>'kind' IN ('evaluation_gold', 'source_access_policy') "
                       "ORDER BY e.seq").to_pylist()
    assert imported == [{"kind": "evaluation_gold", "content": started_with["gold"]},
                        {"kind": "source_access_policy", "content": started_with["policy"]}]
    pins = json.loads(log.sql("SELECT payload->'scoring_files' AS pins FROM events WHERE type = 'run.started'")["pins"][0].as_py())
    assert pins["evaluation_gold"] == {"path": str(gold), "sha256": gold_sha, "size": len(started_with["gold"])}
    assert pins["source_access_policy"] == {"path": str(policy), "sha256": policy_sha, "size": len(started_with["policy"])}
    assert summary.notes == [
        f"{gold} changed while run mid ran; the run keeps the evaluation_gold it read when it started "
        f"(sha256 {gold_sha}); the file is now sha256 {sha256(gold)}",
        f"{policy} changed while run mid ran; the run keeps the source_access_policy it read when it started "
        f"(sha256 {policy_sha}); the file is now sha256 {sha256(policy)}",
    ]


class RunStartedBeforePins(RunStarted):
    """`run.started` as recorded before the scoring files were pinned."""

    scoring_files: dict = Field(default_factory=dict, exclude=True)


def test_a_run_recorded_before_pins_is_held_to_what_it_imported(tmp_path, monkeypatch):
    release = copy_release(tmp_path / "demo")
    log_path = tmp_path / "log.duckdb"
    log = EventLog(log_path)
    monkeypatch.setattr(run_module, "RunStarted", RunStartedBeforePins)
    assert invoke_eval(log_path, "run", "--benchmark", cases(release), "--limit", "2", "--run-id", "old").exit_code == 0
    assert "scoring_files" not in json.loads(log.sql("SELECT payload FROM events WHERE type = 'run.started'")["payload"][0].as_py())
    before = every_event(log)
    assert invoke_eval(log_path, "resume", "old").exit_code == 0
    assert every_event(log) == before  # nothing imported again, no second end

    imported = sha256(gold_file(release))
    flip_labels(gold_file(release), {"demo-0001"})
    refused = invoke_eval(log_path, "resume", "old")
    assert refused.exit_code == 2
    assert refused.stderr == (f"Error: {gold_file(release)} differs from the evaluation_gold of run old (sha256 {imported}; "
                              f"now {sha256(gold_file(release))}); resume refused\n")
    assert every_event(log) == before


class DownAtTheSecondCall(OfflineProvider):
    """The endpoint goes down for good at the run's second model call: the run stops there."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == 2:
            raise ProviderOutage("http://127.0.0.1:9/v1 refused connections")
        return await super().complete(request)


async def nothing_imported_at_the_start(*args) -> None:
    """Runs recorded before the scoring files came first imported them at their end only."""


def test_a_run_recorded_before_pins_that_stopped_before_importing_resumes(tmp_path, monkeypatch):
    """It pinned nothing and imported nothing yet (runs then imported their scoring files at
    their end): nothing holds it, and its resume imports what it reads."""
    release = copy_release(tmp_path / "demo")
    log = EventLog(tmp_path / "log.duckdb")
    options = EvalOptions(benchmark=cases(release), limit=2, concurrency=1)
    with monkeypatch.context() as then:
        then.setattr(run_module, "RunStarted", RunStartedBeforePins)
        then.setattr(run_module, "import_scoring_files", nothing_imported_at_the_start)
        stopped = anyio.run(lambda: start_run(log, options, provider=DownAtTheSecondCall(), run_id="old"))
    assert stopped.stopped and imports_by_kind(log, "old") == {}
    resumed = invoke_eval(log.path, "resume", "old")
    assert resumed.exit_code == 0, resumed.output
    assert imports_by_kind(log, "old")["evaluation_gold"] == [sha256(gold_file(release))]


class DownAtTheTenthCall(DownAtTheSecondCall):
    """Down once the first episode (~7 calls of the offline agent) has finished."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls >= 10:
            raise ProviderOutage("http://127.0.0.1:9/v1 refused connections")
        return await OfflineProvider.complete(self, request)


def test_a_stopped_runs_finished_episodes_are_scored_against_its_gold(tmp_path):
    """The scoring files are the run's first import: before, they came at its end, and until
    then (a stop, a kill, a run still going) every finished episode was scored without gold, as
    wrong, in every view, run directory and dataset export."""
    release = copy_release(tmp_path / "demo")
    log = EventLog(tmp_path / "log.duckdb")
    options = EvalOptions(benchmark=cases(release), limit=3, concurrency=1)
    stopped = anyio.run(lambda: start_run(log, options, provider=DownAtTheTenthCall(), run_id="cut"))
    assert stopped.stopped and imports_by_kind(log, "cut")["evaluation_gold"] == [sha256(gold_file(release))]
    gold = {row["case_id"]: row["label"] for row in map(json.loads, gold_file(release).read_text().splitlines())}
    scored = log.sql("SELECT case_id, gold_label FROM episode_metrics WHERE run_id = 'cut'").to_pylist()
    assert scored and all(row["gold_label"] == gold[row["case_id"]] for row in scored)
