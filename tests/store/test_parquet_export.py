"""`log export-parquet`: the history as hive-partitioned Parquet, incremental and byte-stable,
readable by plain DuckDB and pyarrow and by `eviscene --db DIR`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import anyio
import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.events import ArtifactImported, EpisodeScheduled, RunFinished
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.store.locks import RunLock


def scheduled(case: str) -> EventDraft:
    return EventDraft(EpisodeScheduled(
        case_id=case, prompt_group_id="pg-" + "0" * 24, rollout_index=0, group_size=1, sampling_seed=1,
        image_sha256="0" * 64, image_path=f"images/{case}.jpg"), episode_id=case)


def finished() -> EventDraft:
    return EventDraft(RunFinished(status="completed", completed_at="2026-12-01T00:00:00+00:00", num_episodes=0, num_errors=0))


def write_run(log: EventLog, run_id: str, drafts: list[EventDraft], blob: bytes | None = None) -> None:
    async def write() -> None:
        async with log.writer(run_id) as writer:
            if blob is not None:
                await writer.put_blob(blob, "text/plain")
            for draft in drafts:
                await writer.emit(draft)

    anyio.run(write)


# How the README reads an export with pyarrow: run_id typed, as a hive path does not say
RUN_PARTITIONS = ds.partitioning(pa.schema([("run_id", pa.string())]), flavor="hive")


def files(folder: Path) -> dict[str, str]:
    """The export's files and their digests, less its (empty) lock file."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file() and p != folder / ".export.lock"
    }


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_export_is_hive_partitioned_incremental_byte_stable_and_readable(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [scheduled("c1"), scheduled("c2"), finished()], blob=b"evidence one")
    write_run(log, "r:2", [scheduled("c3"), finished()], blob=b"evidence two")
    out = tmp_path / "history"

    assert "exported 2 run(s) (5 events) and 2 blob(s)" in invoke("--db", str(log.path), "log", "export-parquet", str(out))
    layout = files(out)
    assert sorted(Path(name).parent.as_posix() for name in layout) == ["blobs", "events/run_id=r%3A2", "events/run_id=r1"]
    assert (out / ".export.lock").read_bytes() == b""  # held while exporting, the holder named only then
    # Again: nothing written, not a byte changed.
    assert "exported 0 run(s) (0 events) and 0 blob(s)" in invoke("--db", str(log.path), "log", "export-parquet", str(out))
    assert files(out) == layout
    # Into a new folder: the same bytes.
    invoke("--db", str(log.path), "log", "export-parquet", str(tmp_path / "again"))
    assert files(tmp_path / "again") == layout

    # Plain DuckDB and pyarrow read the partitions, run_id typed as the README says.
    counts = duckdb.sql(
        f"SELECT run_id, count(*), max(seq) FROM read_parquet('{out}/events/*/*.parquet', hive_partitioning = true, "
        "hive_types = {'run_id': VARCHAR}) GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert counts == [("r1", 3, 3), ("r:2", 2, 2)]
    table = ds.dataset(out / "events", format="parquet", partitioning=RUN_PARTITIONS).to_table()
    assert sorted(table.column("run_id").to_pylist()) == ["r1", "r1", "r1", "r:2", "r:2"]
    assert sorted(ds.dataset(out / "blobs", format="parquet").to_table().column("content").to_pylist()) == [b"evidence one", b"evidence two"]

    # `eviscene --db DIR` runs the views over it, with the original's answers.
    query = "SELECT run_id, count(*) AS n FROM episodes GROUP BY 1 ORDER BY 1"
    assert invoke("--db", str(out), "sql", query) == invoke("--db", str(log.path), "sql", query)
    # --db after the command name takes the folder too, as before it.
    assert invoke("sql", "--db", str(out), query) == invoke("--db", str(log.path), "sql", query)
    assert EventLog(out).sql("SELECT count(*) AS n FROM episodes").to_pylist() == [{"n": 3}]
    assert EventLog(out).sql("SELECT count(*) AS n FROM blobs").to_pylist() == [{"n": 2}]
    assert "ok: 2 run(s), 5 events, every chain intact and complete" in invoke("--db", str(out), "log", "verify")


def test_run_ids_that_look_like_numbers_read_back_as_written_with_the_readme_s_types(tmp_path: Path) -> None:
    """A hive path carries no types: read untyped, `007` and `10` come back as the numbers 7
    and 10 (pyarrow: int32), which no longer name the log's runs. The README's reads type them."""
    log = EventLog(tmp_path / "log.duckdb")
    for run_id in ("007", "10"):
        write_run(log, run_id, [scheduled("c1"), finished()])
    out = tmp_path / "history"
    invoke("--db", str(log.path), "log", "export-parquet", str(out))
    assert duckdb.sql(f"SELECT DISTINCT run_id FROM read_parquet('{out}/events/*/*.parquet', hive_partitioning = true, "
                      "hive_types = {'run_id': VARCHAR}) ORDER BY 1").fetchall() == [("007",), ("10",)]
    table = ds.dataset(out / "events", format="parquet", partitioning=RUN_PARTITIONS).to_table()
    assert sorted(set(table.column("run_id").to_pylist())) == ["007", "10"]


def test_a_run_that_grows_is_re_exported_and_one_being_written_is_left_naming_its_writer(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [scheduled("c1"), finished()])
    out = tmp_path / "history"
    invoke("--db", str(log.path), "log", "export-parquet", str(out))
    first = files(out)
    write_run(log, "r1", [scheduled("c2"), finished()])  # a resume: the run grew to seq 4
    write_run(log, "r2", [scheduled("c9")])
    lock = RunLock(log.path.with_name(log.path.name + ".live") / "r2" / "writer.lock", "r2").acquire()
    try:
        output = invoke("--db", str(log.path), "log", "export-parquet", str(out))
    finally:
        lock.release()
    assert "exported 1 run(s) (4 events)" in output
    assert f"held, not exported (run this again when it ends): r2 (by pid {os.getpid()} " in output
    names = sorted(files(out))
    assert [n for n in names if n.startswith("events/")] == [
        next(n for n in names if n.startswith("events/run_id=r1/events-000000000004-"))
    ]
    assert set(first) & set(files(out)) == set()  # the old r1 file replaced; no blobs here
    assert EventLog(out).sql("SELECT count(*) AS n FROM episodes").to_pylist() == [{"n": 2}]


def test_an_export_killed_between_a_grown_run_s_new_file_and_removing_its_old_one_counts_nothing_twice(tmp_path: Path) -> None:
    """The new file is renamed into place before the old one goes: an export killed between the
    two left both, every read counted the run's first events twice, and the next export found
    the new file there, called the run unchanged and never removed the old one."""
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [scheduled("c1"), finished()])
    out = tmp_path / "history"
    invoke("--db", str(log.path), "log", "export-parquet", str(out))
    [old] = (out / "events" / "run_id=r1").glob("events-*.parquet")
    kept = old.read_bytes()
    write_run(log, "r1", [scheduled("c2"), finished()])  # a resume: the run grew to seq 4
    invoke("--db", str(log.path), "log", "export-parquet", str(out))
    old.write_bytes(kept)  # what the killed export left beside the new file

    assert EventLog(out).sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 4}]
    assert EventLog(out).sql("SELECT case_id FROM episodes ORDER BY case_id").to_pylist() == [{"case_id": "c1"}, {"case_id": "c2"}]
    assert EventLog(out).verify().ok
    output = invoke("--db", str(log.path), "log", "export-parquet", str(out))
    assert output.startswith("exported 0 run(s) (0 events) and 0 blob(s)") and output.rstrip().endswith("; 1 unchanged"), output
    assert files(out) == files_of_a_fresh_export(log, tmp_path / "fresh")


def test_a_folder_that_is_not_an_export_and_writes_to_one_are_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "plain"), "sql", "SELECT 1"])
    assert result.exit_code == 2 and "not a `log export-parquet` export" in result.output
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [finished()])
    invoke("--db", str(log.path), "log", "export-parquet", str(tmp_path / "out"))
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "out"), "log", "merge", str(log.path)])
    assert result.exit_code == 2 and "read only" in result.output
    result = CliRunner().invoke(cli, ["log", "merge", "--db", str(tmp_path / "out"), str(log.path)])
    assert result.exit_code == 2 and "read only" in result.output


def test_a_run_into_an_export_is_refused_before_it_plans_or_claims_anything(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [finished()])
    export = tmp_path / "out"
    invoke("--db", str(log.path), "log", "export-parquet", str(export))
    before = files(tmp_path)
    benchmark = Path(__file__).resolve().parents[2] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
    result = CliRunner().invoke(cli, ["--db", str(export), "eval", "run", "--benchmark", str(benchmark), "--limit", "1"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"Error: {export} is a folder (a `log export-parquet` export is read only); name a .duckdb log\n"  # no bar drawn
    assert files(tmp_path) == before and not (tmp_path / "out.live").exists()  # no run id claimed beside it


def test_record_streams_are_counted_as_log_verify_counts_them_not_as_runs(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [scheduled("c1"), finished()])
    write_run(log, "import-1", [EventDraft(ArtifactImported(kind="seed_trace", path="t.json", sha256="0" * 64, rows=1))])
    out = tmp_path / "history"
    assert "exported 1 run(s), 1 import stream(s) (3 events) and 0 blob(s)" in invoke(
        "--db", str(log.path), "log", "export-parquet", str(out))
    assert f"exported 0 run(s) (0 events) and 0 blob(s) to {out}; 2 unchanged" in invoke(
        "--db", str(log.path), "log", "export-parquet", str(out))
    assert "ok: 1 run(s), 1 import stream(s), 3 events" in invoke("--db", str(log.path), "log", "verify")


def test_a_merge_into_a_run_being_written_here_names_its_writer(tmp_path: Path) -> None:
    """It said `run x is still being written in T`, naming no holder (every other refusal does)."""
    source = EventLog(tmp_path / "source.duckdb")
    write_run(source, "x", [scheduled("c2"), finished()])
    target = EventLog(tmp_path / "target.duckdb")
    write_run(target, "x", [scheduled("c1")])
    lock = RunLock(target.path.with_name(target.path.name + ".live") / "x" / "writer.lock", "x").acquire()  # its writer at work
    try:
        held = CliRunner().invoke(cli, ["--db", str(target.path), "log", "merge", str(source.path)])
    finally:
        lock.release()
    assert held.exit_code == 2 and held.output.startswith(f"Error: run x is being written in {target.path} by pid {os.getpid()} ")
    assert held.output.endswith("; merge it when it ends\n") and held.output.count("\n") == 1
    assert target.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 1}]


def test_an_export_never_writes_through_a_link_among_its_folders(tmp_path: Path) -> None:
    """`out/events` made a link to the log's live folder: the export wrote a `run_id=…` folder
    into it, a would-be run folder of the log (and `out/blobs` made a link to a run folder read
    its event segments as blob files, a traceback). Each link is now refused, nothing written."""
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [scheduled("c1"), finished()], blob=b"page")
    live = tmp_path / "log.duckdb.live"
    live.mkdir(exist_ok=True)
    for name, target in (("events", live), ("blobs", live), ("events/run_id=r1", live)):
        out = tmp_path / f"out-{name.replace('/', '-')}"
        (out / name).parent.mkdir(parents=True)
        (out / name).symlink_to(target)
        before = sorted(str(p) for p in live.rglob("*"))
        result = CliRunner().invoke(cli, ["--db", str(log.path), "log", "export-parquet", str(out)])
        assert (result.exit_code, result.output) == (
            2, f"Error: {out / name} is a link: an export folder's events/ and blobs/ folders are its own; remove the link\n")
        assert sorted(str(p) for p in live.rglob("*")) == before


def test_one_export_at_a_time_writes_a_folder_and_a_killed_ones_files_go(tmp_path: Path) -> None:
    """Two exports into one folder at once each wrote the blobs neither found there, and every
    view joining on blobs counted them twice (`log verify` now names such a blob). The second
    is refused, the holder named; what a killed export left goes at the next export."""
    from eviscene.store.locks import folder_lock

    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [scheduled("c1"), finished()], blob=b"evidence one")
    out = tmp_path / "history"
    out.mkdir()
    with folder_lock(out / ".export.lock", "an export"):
        refused = CliRunner().invoke(cli, ["--db", str(log.path), "log", "export-parquet", str(out)])
    assert refused.exit_code == 2
    assert refused.stderr.startswith(f"Error: export folder {out} is being written by pid {os.getpid()} (")
    assert sorted(p.name for p in out.iterdir()) == [".export.lock"]

    (out / "blobs").mkdir()
    (out / "events" / "run_id=r1").mkdir(parents=True)
    left = [out / "blobs" / ".blobs-0123456789abcdef.parquet.0123456789ab.tmp",
            out / "events" / "run_id=r1" / ".events-000000000002-0123456789abcdef.parquet.0123456789ab.tmp"]
    for path in left:
        path.write_bytes(b"half a file")
    invoke("--db", str(log.path), "log", "export-parquet", str(out))
    assert not any(path.exists() for path in left)
    assert files(out) == files_of_a_fresh_export(log, tmp_path / "fresh")
    assert EventLog(out).verify().ok


def test_a_blob_two_exports_both_wrote_is_named_by_verify(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "log.duckdb")
    write_run(log, "r1", [scheduled("c1"), finished()], blob=b"evidence one")
    out = tmp_path / "history"
    invoke("--db", str(log.path), "log", "export-parquet", str(out))
    [blobs] = (out / "blobs").glob("*.parquet")
    (out / "blobs" / "blobs-0123456789abcdef.parquet").write_bytes(blobs.read_bytes())  # what the race left
    address = hashlib.sha256(b"evidence one").hexdigest()
    assert [str(p) for p in EventLog(out).verify().problems] == [
        f"blob {address}: stored 2 times (every view that joins on blobs counts it 2 times)"
    ]


def files_of_a_fresh_export(log: EventLog, folder: Path) -> dict[str, str]:
    invoke("--db", str(log.path), "log", "export-parquet", str(folder))
    return files(folder)


def test_folders_and_run_ids_named_key_value_are_names_not_columns(tmp_path: Path) -> None:
    """DuckDB reads a path with a `key=value` folder as hive partitions unless told not to: a
    log under `step=1000/`, or a run id `type=x`, read back with that value in every row's
    column of that name (run_id, type), so the run's own hashes no longer matched: `log seal`
    refused it as edited, and `log verify` called it broken."""
    home = tmp_path / "step=1000"
    log = EventLog(home / "log.duckdb")
    for run_id in ("type=x", "run_id=y"):
        write_run(log, run_id, [scheduled("c1"), finished()], blob=b"evidence")
    expected = [("run_id=y", "episode.scheduled"), ("run_id=y", "run.finished"),
                ("type=x", "episode.scheduled"), ("type=x", "run.finished")]
    query = "SELECT run_id, type FROM events ORDER BY run_id, seq"
    assert log.sql(query).to_pylist() == [{"run_id": r, "type": t} for r, t in expected]  # live segments
    assert "sealed 2 run(s)" in invoke("--db", str(log.path), "log", "seal")
    assert log.sql(query).to_pylist() == [{"run_id": r, "type": t} for r, t in expected]  # the archive
    out = home / "a=1" / "history"
    invoke("--db", str(log.path), "log", "export-parquet", str(out))
    assert EventLog(out).sql(query).to_pylist() == [{"run_id": r, "type": t} for r, t in expected]
    assert "ok: 2 run(s), 4 events, every chain intact and complete" in invoke("--db", str(out), "log", "verify")
