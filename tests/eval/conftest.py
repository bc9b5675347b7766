"""One offline run over a copy of the bundled release (gold salted with a canary string),
shared by the end-to-end tests."""

import json
import shutil
from pathlib import Path

import anyio
import pytest

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog

BUNDLED = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1"
CANARY = "GOLD-CANARY-5f0c2e9a1d"


def salted_release(target: Path) -> Path:
    """A copy of the bundled release whose gold carries a canary in every row."""
    shutil.copytree(BUNDLED, target)
    gold = target / "private" / "evaluation_gold.jsonl"
    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        row["reviewer_note"] = f"{CANARY} {row['case_id']}"
        for fact in row["reference_chain"]["facts"]:
            fact["statement"] += f" [{CANARY}]"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return target


@pytest.fixture(scope="session")
def release(tmp_path_factory) -> Path:
    return salted_release(tmp_path_factory.mktemp("release") / "demo")


@pytest.fixture(scope="session")
def offline_run(release, tmp_path_factory):
    log = EventLog(tmp_path_factory.mktemp("log") / "run.duckdb")
    options = EvalOptions(
        benchmark=str(release / "runtime_input" / "cases.jsonl"), rollouts_per_case=2, concurrency=4
    )
    summary = anyio.run(start_run, log, options)
    return log, summary


@pytest.fixture(scope="session")
def canary() -> str:
    return CANARY


def _model_facing_texts(log: EventLog) -> list[str]:
    """Everything a model was sent or shown: every request body and every tool observation."""
    requests = log.sql(
        "SELECT decode(b.content) AS text FROM events e JOIN blobs b ON b.sha256 = e.payload->>'request_sha256' "
        "WHERE e.type = 'model.called'"
    )["text"].to_pylist()
    observations = log.sql("SELECT payload->>'observation' AS text FROM events WHERE type = 'tool.returned'")["text"].to_pylist()
    return requests + observations


@pytest.fixture
def model_facing_texts():
    return _model_facing_texts
