"""The chain holds only a blob's address, so `log verify` checks each blob's content against
it and looks for every blob an event cites; seal and merge refuse what it would call broken.
The gold an import stores is a blob: editing it would change every score unseen."""

import hashlib
import json

import anyio
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from eviscene.cli.main import cli
from eviscene.errors import LogIntegrityError
from eviscene.events import ArtifactImported
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.store.manifest import file_sha256

GOLD = b'{"case_id": "c1", "label": "authentic"}\n'
FORGED = b'{"case_id": "c1", "label": "manipulated"}\n'
GOLD_SHA = hashlib.sha256(GOLD).hexdigest()


def write_gold(log: EventLog, run_id: str = "gold") -> None:
    """An import stream as `eviscene import` writes one: the file as a blob, an event citing it."""

    async def write() -> None:
        async with log.writer(run_id) as writer:
            await writer.put_blob(GOLD, "application/jsonl")
            await writer.emit(EventDraft(ArtifactImported(kind="evaluation_gold", path="gold.jsonl", sha256=GOLD_SHA, blob_sha256=GOLD_SHA, rows=1)))

    anyio.run(write)


@pytest.fixture
def gold_log(tmp_path):
    log = EventLog(tmp_path / "log.duckdb")
    write_gold(log)
    log.seal()
    assert log.verify().ok
    return log


def edit_archive(log: EventLog, sql: str, params: list) -> None:
    con = duckdb.connect(str(log.path))
    con.execute(sql, params)
    con.close()


def test_an_edited_gold_blob_is_named_and_the_cli_exits_1(gold_log):
    edit_archive(gold_log, "UPDATE blobs SET content = ? WHERE sha256 = ?", [FORGED, GOLD_SHA])
    assert gold_log.sql("SELECT decode(content) AS c FROM blobs").to_pylist() == [{"c": FORGED.decode()}]  # what scoring would read
    result = CliRunner().invoke(cli, ["--db", str(gold_log.path), "log", "verify"])
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == f"BROKEN blob {GOLD_SHA}: its content does not hash to its address (edited)"


def test_a_blob_whose_size_was_edited_is_named(gold_log):
    edit_archive(gold_log, "UPDATE blobs SET size = 7 WHERE sha256 = ?", [GOLD_SHA])
    assert [str(p) for p in gold_log.verify().problems] == [f"blob {GOLD_SHA}: {len(GOLD)} bytes, recorded as 7"]


def test_a_deleted_blob_that_an_event_cites_is_named(gold_log):
    edit_archive(gold_log, "DELETE FROM blobs WHERE sha256 = ?", [GOLD_SHA])
    assert [str(p) for p in gold_log.verify().problems] == [
        f"blob {GOLD_SHA}: cited by run gold (seq 1, 1 event(s)) but not in the log (deleted)"
    ]


def test_merge_refuses_a_log_with_an_edited_blob(gold_log, tmp_path):
    edit_archive(gold_log, "UPDATE blobs SET content = ? WHERE sha256 = ?", [FORGED, GOLD_SHA])
    target = tmp_path / "all.duckdb"
    result = CliRunner().invoke(cli, ["--db", str(target), "log", "merge", str(gold_log.path)])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {gold_log.path} not merged: blob {GOLD_SHA}: its content does not hash to its address (edited); nothing was taken in\n"
    )
    assert not target.exists()


def forge_live_blob(log: EventLog) -> None:
    """The blob segment rewritten with forged content and its manifest line updated to match:
    the file's sha256 agrees with the manifest, only the blob's own address does not."""
    folder = log.path.with_name(log.path.name + ".live") / "gold"
    [path] = folder.glob("blobs-*.parquet")
    table = pq.read_table(path)
    pq.write_table(table.set_column(3, "content", pa.array([FORGED], pa.binary())), path)
    lines = [json.loads(line) for line in (folder / "segments.jsonl").read_text().splitlines()]
    lines = [{**line, "sha256": file_sha256(path)} if line["file"] == path.name else line for line in lines]
    (folder / "segments.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_live_blob_forged_with_its_manifest_line_is_named_and_not_sealed(tmp_path):
    log = EventLog(tmp_path / "live.duckdb")
    write_gold(log)
    forge_live_blob(log)
    assert [str(p) for p in log.verify().problems] == [f"blob {GOLD_SHA}: its content does not hash to its address (edited)"]
    with pytest.raises(LogIntegrityError, match=f"run gold not sealed: blob {GOLD_SHA}: its content does not hash to its address"):
        log.seal(["gold"])
    assert not log.path.exists()  # the archive was never written


def test_a_forged_copy_of_a_live_blob_beside_the_real_one_is_named(tmp_path):
    """A second blob segment, listed in the manifest, holding the gold's address with forged
    content: readers see one copy of an address, either one, so verify checks every copy."""
    log = EventLog(tmp_path / "live.duckdb")
    write_gold(log)
    folder = log.path.with_name(log.path.name + ".live") / "gold"
    [real] = folder.glob("blobs-*.parquet")
    forged = folder / "blobs-ffffffffffffffff-000000001.parquet"
    table = pq.read_table(real)
    pq.write_table(table.set_column(3, "content", pa.array([FORGED], pa.binary())), forged)
    with (folder / "segments.jsonl").open("a") as manifest:
        manifest.write(json.dumps({"file": forged.name, "rows": 1, "sha256": file_sha256(forged)}) + "\n")
    assert [str(p) for p in log.verify().problems] == [f"blob {GOLD_SHA}: its content does not hash to its address (edited)"]


def test_seal_refuses_a_run_citing_a_deleted_live_blob_and_writes_nothing(tmp_path):
    """The blob segment of a live run deleted with its manifest line (so every segment still
    matches the manifest): verify names the cited blob gone, and so does the seal, which
    leaves the archive and the run's live folder as they were."""
    log = EventLog(tmp_path / "live.duckdb")
    log.append("other", [EventDraft(ArtifactImported(kind="note", path="n", sha256="0" * 64, rows=0))])
    log.seal()  # an archive to keep unchanged
    write_gold(log)
    folder = log.path.with_name(log.path.name + ".live") / "gold"
    [blobs] = folder.glob("blobs-*.parquet")
    blobs.unlink()
    manifest = folder / "segments.jsonl"
    manifest.write_text("".join(line + "\n" for line in manifest.read_text().splitlines() if blobs.name not in line))
    cited = f"blob {GOLD_SHA}: cited by run gold (seq 1, 1 event(s)) but not in the log (deleted)"
    assert [str(p) for p in log.verify().problems] == [cited]
    archive, live = file_sha256(log.path), {p.name: p.read_bytes() for p in folder.iterdir()}
    result = CliRunner().invoke(cli, ["--db", str(log.path), "log", "seal", "gold"])
    assert (result.exit_code, result.output) == (2, f"Error: run gold not sealed: {cited}; the archive is unchanged\n")
    result = CliRunner().invoke(cli, ["--db", str(log.path), "log", "seal"])  # every run, as `eval run`'s end and merge seal
    assert (result.exit_code, result.output) == (2, f"Error: run gold not sealed: {cited}; the archive is unchanged\n")
    assert file_sha256(log.path) == archive
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == live


def test_the_seals_cited_blob_check_reads_a_newer_snapshot_when_a_segment_moved_under_it(tmp_path, monkeypatch):
    """The check reads every run's live blobs; another run's seal may remove one mid-read
    (two `eval run`s ending at once): the seal reads again rather than fail."""
    from eviscene.store import seal as seal_module

    log = EventLog(tmp_path / "live.duckdb")
    write_gold(log)
    opened = []

    def moved_once(path):
        opened.append(path)
        if len(opened) == 1:
            raise duckdb.IOException(f'IO Error: No files found that match the pattern "{path}.live/x/blobs-1.parquet"')
        return real(path)

    real = seal_module.open_snapshot
    monkeypatch.setattr(seal_module, "open_snapshot", moved_once)
    assert log.seal(["gold"]) == ["gold"]
    assert len(opened) == 2 and log.verify().ok


def live_blob_segment(log: EventLog):
    [path] = (log.path.with_name(log.path.name + ".live") / "gold").glob("blobs-*.parquet")
    return path


def test_a_truncated_live_blob_segment_is_named_and_the_cli_exits_1(tmp_path):
    """It used to stop verify with DuckDB's `No magic bytes found at end of file` (exit 2)."""
    log = EventLog(tmp_path / "live.duckdb")
    write_gold(log)
    path = live_blob_segment(log)
    path.write_bytes(path.read_bytes()[:-200])
    result = CliRunner().invoke(cli, ["--db", str(log.path), "log", "verify"])
    assert (result.exit_code, result.output.splitlines()[0]) == (
        1, f"BROKEN run gold: segment {path.name} was altered (sha256 differs from its manifest line)"
    )


def test_an_altered_live_blob_segment_is_named_without_a_seq_range(tmp_path):
    log = EventLog(tmp_path / "live.duckdb")
    write_gold(log)
    path = live_blob_segment(log)
    pq.write_table(pq.read_table(path), path, compression="snappy")  # the same blob, other bytes
    assert [str(p) for p in log.verify().problems] == [
        f"run gold: segment {path.name} was altered (sha256 differs from its manifest line)"
    ]
