"""`eviscene log verify`: walk every run's chain and report the first break in each."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from eviscene.store.chain import GENESIS_HASH, content_digest, event_hash


@dataclass(frozen=True)
class ChainProblem:
    run_id: str
    seq: int
    event_id: str
    problem: str

    def __str__(self) -> str:
        return f"run {self.run_id}, seq {self.seq} ({self.event_id}): {self.problem}"


@dataclass(frozen=True)
class VerifyReport:
    runs: int
    events: int
    problems: list[ChainProblem]

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_chain(con: duckdb.DuckDBPyConnection) -> VerifyReport:
    problems: list[ChainProblem] = []
    duplicates = con.execute(
        "SELECT event_id, min(run_id), min(seq), count(*) FROM events GROUP BY event_id HAVING count(*) > 1 ORDER BY 1"
    ).fetchall()
    for event_id, run_id, seq, count in duplicates:
        problems.append(ChainProblem(run_id, seq, event_id, f"event_id stored {count} times"))
    reader = con.sql(
        "SELECT run_id, seq, event_id, epoch_us(ts) AS ts, episode_id, attempt, type, step, payload::VARCHAR AS payload, prev_hash, hash "
        "FROM events ORDER BY run_id, seq"
    ).to_arrow_reader(50_000)
    runs = events = 0
    current_run, expected_seq, prev_hash, run_broken = None, 1, GENESIS_HASH, False
    for batch in reader:
        columns = batch.to_pydict()
        for i in range(batch.num_rows):
            run_id, seq, event_id = columns["run_id"][i], columns["seq"][i], columns["event_id"][i]
            events += 1
            if run_id != current_run:
                runs += 1
                current_run, expected_seq, prev_hash, run_broken = run_id, 1, GENESIS_HASH, False
            if run_broken:
                continue
            problem = None
            if seq != expected_seq:
                problem = (
                    f"seq {expected_seq}..{seq - 1} missing (deleted events)" if seq > expected_seq
                    else "seq repeated (reordered or duplicated events)"
                )
            elif columns["prev_hash"][i] != prev_hash:
                problem = "prev_hash does not match the previous event (reordered, inserted or deleted events)"
            elif event_hash(
                prev_hash, seq, event_id, columns["ts"][i],
                content_digest(
                    run_id, columns["episode_id"][i], columns["attempt"][i], columns["type"][i],
                    columns["step"][i], columns["payload"][i],
                ),
            ) != columns["hash"][i]:
                problem = "hash does not match the event's content (edited event)"
            if problem:
                problems.append(ChainProblem(run_id, seq, event_id, problem))
                run_broken = True
                continue
            expected_seq, prev_hash = seq + 1, columns["hash"][i]
    return VerifyReport(runs=runs, events=events, problems=problems)
