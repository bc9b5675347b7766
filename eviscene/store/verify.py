"""`eviscene log verify`: prove each run is intact and complete.

- The chain: every event's seq (gapless from 1), prev_hash and hash, walked in seq order;
  the first break in each run is named (an edited, deleted, inserted or reordered event).
- The segments: each live segment against its manifest line (present, same sha256), the
  archive's rows against its `sealed_segments` records (each sealed range fully there, no
  row outside one), and the run's last event against the last seq and hash recorded at
  commit: a cut-off tail shows even when what is left chains perfectly.
- The end: a run no writer holds ends with `run.finished` (stamped with the chain head it
  closes); one without is reported unfinished. A record stream (`eviscene import`, `dataset
  export`: it opens with `artifact.imported` or `dataset.exported`) has no end event: it
  owes its tail recorded at commit and exactly the events its opener announces (an import's
  source record counts its files; an export is one event), so a stream cut down together
  with its commit records still shows. A run whose lock is held is reported running and
  verified up to its last commit: every committed segment present and intact; only what
  is past the last commit may be in flight.
- A folded shard (`log merge`): behind its `log_shard` record, the shard's own chain is
  rebuilt over its events (and those it shared, from the record) and must end at the
  recorded head; the shard's run.finished is checked against that chain.
- The heads (`--check-heads`): a run whose chain held a recorded hash at a recorded seq must
  still hold it there: a rewrite that hashed every later event again keeps the chain
  intact but not its heads (`eviscene.store.heads`).
- The blobs: each one's content must still hash to its address (the chain holds only the
  address: an edited blob, say the gold an import stored, would otherwise change every score
  unseen), and every blob an event cites must be there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from eviscene.errors import ArchiveDamagedError, LogIntegrityError
from eviscene.rules.commands import command_line, output_dir_words
from eviscene.store.chain import GENESIS_HASH, batch_hashes, content_digest, event_hash, unchainable
from eviscene.store.heads import Heads
from eviscene.store.layout import RECORDED_OUTPUT_DIRS, live_root, live_run_ids
from eviscene.store.locks import lock_holder
from eviscene.store.snapshot import attach_archive, limit_memory, new_connection, open_snapshot
from eviscene.store.streams import RECORD_OPENERS, announced_after, count_streams
from eviscene.store.parquet_export import exported_ends
from eviscene.store.manifest import BLOBS_FILE, EVENTS_FILE, ManifestEntry, MalformedManifest, committed, file_sha256, read_manifest, unrecorded_tail

# A stream is a record stream when it opens with one of these, by what wrote it; any other is a run.
RECORD_COLUMNS = "run_id, file_name, rows, sha256, first_seq, last_seq, first_prev_hash, last_hash"


@dataclass(frozen=True)
class ChainProblem:
    run_id: str | None  # None: an event with no run_id (a forged segment's)
    seq: int
    event_id: str
    problem: str

    def __str__(self) -> str:
        return f"run {self.run_id}, seq {self.seq} ({self.event_id}): {self.problem}"


@dataclass(frozen=True)
class RangeProblem:
    """Events of a seq range that the log recorded but cannot show as recorded; no range for
    a blob segment (it holds no events)."""

    run_id: str
    first_seq: int | None
    last_seq: int | None
    problem: str

    def __str__(self) -> str:
        where = f", seq {self.first_seq}..{self.last_seq}" if self.first_seq is not None else ""
        return f"run {self.run_id}{where}: {self.problem}"


@dataclass(frozen=True)
class HeadProblem:
    run_id: str
    seq: int
    problem: str

    def __str__(self) -> str:
        return f"run {self.run_id}, seq {self.seq}: {self.problem}"


@dataclass(frozen=True)
class BlobProblem:
    sha256: str
    problem: str

    def __str__(self) -> str:
        return f"blob {self.sha256}: {self.problem}"


_CORRUPT_FILE = "Corrupt database file"


@dataclass(frozen=True)
class ArchiveProblem:
    """The archive itself damaged past reading (a table of the log dropped, a block whose
    checksum fails)."""

    problem: str

    def __str__(self) -> str:
        return self.problem


@dataclass(frozen=True)
class RunNote:
    run_id: str
    verified_seq: int
    note: str
    unrecorded: bool = False  # a batch on disk whose commit was cut short: no copy of the log holds it yet

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.note}"


@dataclass(frozen=True)
class VerifyReport:
    runs: int  # streams that are runs (`eval run`, merged shards), each owing a run.finished
    events: int
    problems: list[ChainProblem | RangeProblem | HeadProblem | BlobProblem | ArchiveProblem]
    unfinished: list[RunNote] = field(default_factory=list)
    running: list[RunNote] = field(default_factory=list)
    imports: int = 0  # record streams of `eviscene import`
    exports: int = 0  # record streams of `dataset export`
    heads: dict[str, tuple[int, str]] = field(default_factory=dict)  # each stream's last verified (seq, hash)

    @property
    def summary(self) -> str:
        """What was verified, each kind of stream by its name: `1 run(s), 2 import stream(s),
        11 events` (a kind the log holds none of is left out, runs aside)."""
        counts = {"run": self.runs, "import": self.imports, "export": self.exports}
        return f"{count_streams(counts)}, {self.events} events"

    @property
    def intact(self) -> bool:
        """Nothing edited, deleted or reordered (an interrupted run may still lack its end)."""
        return not self.problems

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unfinished


@dataclass
class ChainWalk:
    streams: int = 0
    events: int = 0
    problems: list[ChainProblem] = field(default_factory=list)
    tails: dict[str, tuple[int, str, str]] = field(default_factory=dict)  # run -> (seq, hash, type) of its last event
    record_streams: dict[str, str] = field(default_factory=dict)  # run -> "import"/"export": opens with a record, owes no run.finished
    announced: dict[str, int] = field(default_factory=dict)  # record stream -> events after its opener, as the opener says
    pinned: dict[str, str] = field(default_factory=dict)  # run -> the verified hash at the seq `walk_chains` was asked for


_WALK_COLUMNS = "run_id, seq, event_id, epoch_us(ts) AS ts, episode_id, attempt, type, step, payload::VARCHAR AS payload, prev_hash, hash"

# Rows a slice of `ordered_events` sorts (at most, but for repeated seqs), and DuckDB's memory while it reads them: one
# sort of every event, payloads included, held them all in memory, and DuckDB kept every block
# of the log it read cached (3.1 GiB for a 100k-episode run's 3.2M events; 0.95 GiB sliced
# and bounded). Large payloads may not fit the bound however small the slice (a Parquet
# segment's row group is read whole: 3,000 events of 200 KiB): the bound is then lifted.
_WALK_SLICE_ROWS = 250_000
WALK_MEMORY_LIMIT = 512 * 2**20


def ordered_events(
    con: duckdb.DuckDBPyConnection, source: str, scope: str = "TRUE", params: dict | None = None, batch_rows: int = 50_000,
) -> Iterator[pa.RecordBatch]:
    """The events of `source` (a table or table function) that match `scope`, as `walk_chains`
    reads them: `ORDER BY run_id, seq`, NULLs last, read a slice at a time: consecutive runs of
    at most `_WALK_SLICE_ROWS` events in all, or a range of one longer run's seqs, cut at the
    quantiles of its seqs (so that no gap or repeat in them makes many; a seq repeated across a
    cut, or NULL run_ids, make a slice larger). Sets `con`'s DuckDB memory to `WALK_MEMORY_LIMIT`
    (lifted only while a slice that does not fit it is read), and leaves it so for the caller."""
    params = params or {}
    limit_memory(con, WALK_MEMORY_LIMIT)

    def read(where: str, values: dict) -> Iterator[pa.RecordBatch]:
        query = f"SELECT {_WALK_COLUMNS} FROM {source} WHERE ({scope}) AND {where} ORDER BY run_id, seq"
        try:  # DuckDB sorts the whole slice before its first batch: a slice that does not fit fails before any is read
            reader = con.sql(query, params={**params, **values}).to_arrow_reader(batch_rows)
            first = reader.read_next_batch()
        except StopIteration:
            return
        except (duckdb.OutOfMemoryException, OSError) as exc:  # OSError: DuckDB's, through Arrow's stream
            if not str(exc).startswith("Out of Memory Error"):
                raise
        else:
            yield first
            yield from reader
            return
        con.execute("RESET memory_limit")  # for this slice only
        yield from con.sql(query, params={**params, **values}).to_arrow_reader(batch_rows)
        limit_memory(con, WALK_MEMORY_LIMIT)

    sizes = con.execute(f"SELECT run_id, count(*) FROM {source} WHERE ({scope}) GROUP BY run_id ORDER BY run_id", params).fetchall()
    together: list[str] = []  # consecutive short runs, read in one slice
    held = 0
    for run_id, events in [*sizes, (None, 0)]:  # the None closes the last slice
        if together and (run_id is None or events > _WALK_SLICE_ROWS or held + events > _WALK_SLICE_ROWS):
            yield from read("run_id BETWEEN $first AND $last", {"first": together[0], "last": together[-1]})
            together, held = [], 0
        if run_id is None:
            if events:  # NULL run_ids (a forged segment's) sort last
                yield from read("run_id IS NULL", {})
        elif events > _WALK_SLICE_ROWS:
            slices = -(-events // _WALK_SLICE_ROWS)
            [(cuts,)] = con.execute(f"SELECT quantile_disc(seq, $fractions) FROM {source} WHERE ({scope}) AND run_id = $run",
                                    {**params, "fractions": [i / slices for i in range(1, slices)], "run": run_id}).fetchall()
            cuts = sorted({cut for cut in cuts or [] if cut is not None})
            for low, high in zip([None, *cuts], [*cuts, None]):
                yield from read(*_seq_range(run_id, low, high))
        else:
            together.append(run_id)
            held += events


def _seq_range(run_id: str, low: int | None, high: int | None) -> tuple[str, dict]:
    """Run `run_id`'s events with `low` <= seq < `high` (None: no bound; NULL seqs, which sort
    last, with the last range): a WHERE condition and its parameters."""
    where, values = "run_id = $run", {"run": run_id}
    if low is not None:
        where += " AND (seq >= $low" + (" OR seq IS NULL)" if high is None else ")")
        values["low"] = low
    if high is not None:
        where += " AND seq < $high"
        values["high"] = high
    return where, values


def walk_chains(
    batches: Iterable[pa.RecordBatch], start: dict[str, tuple[int, str]] | None = None, pin: Mapping[str, int] | None = None,
) -> ChainWalk:
    """Walk events ordered by (run_id, seq); a run starts at seq 1 and the genesis hash unless
    `start` names the (seq, hash) it continues from. A run's tail is its last event before
    any break; `pin` names a seq per run whose hash to keep, once verified."""
    walk = ChainWalk()
    start, pin = start or {}, pin or {}
    current, broken = None, False
    last_seq, opening_seq, prev_hash, last_type = 0, 0, GENESIS_HASH, ""
    shard: ShardChain | None = None
    for batch, marked in _cut_at_marks(batches):
        if not marked and current is not None and shard is None and _one_run(batch, current):
            if broken:  # past its first break: nothing of it is read
                walk.events += batch.num_rows
                continue
            if (tail := _clean_continuation(batch, last_seq, prev_hash)) is not None:
                walk.events += batch.num_rows
                last_seq, prev_hash, last_type = tail
                if (pinned := pin.get(current)) is not None and last_seq - batch.num_rows < pinned <= last_seq:
                    walk.pinned[current] = batch.column("hash")[pinned - (last_seq - batch.num_rows) - 1].as_py()
                continue
        c = batch.to_pydict()
        rows = zip(c["run_id"], c["seq"], c["event_id"], c["ts"], c["episode_id"], c["attempt"], c["type"],
                   c["step"], c["payload"], c["prev_hash"], c["hash"])
        for run_id, seq, event_id, ts, episode_id, attempt, type_, step, payload, row_prev, row_hash in rows:
            walk.events += 1
            if run_id is None:  # no writer stores one (a forged segment's); they sort last, after every run
                if not any(p.run_id is None for p in walk.problems):
                    walk.problems.append(ChainProblem(None, seq, event_id, "run_id is NULL, which no writer stores (forged event)"))
                continue
            if run_id != current:
                if current is not None:
                    _close(walk, current, (last_seq, prev_hash, last_type), shard, broken)
                walk.streams += 1
                last_seq, prev_hash = start.get(run_id, (0, GENESIS_HASH))
                opening_seq = last_seq
                current, broken, last_type, shard = run_id, False, "", None
            if broken:
                continue
            problem = None
            if seq is None:
                problem = "seq is NULL, which no writer stores (forged event)"
            elif seq != last_seq + 1:
                problem = (
                    f"seq {last_seq + 1}..{seq - 1} missing (deleted events)" if seq > last_seq + 1
                    else "seq repeated (reordered or duplicated events)" if last_seq > opening_seq
                    else f"seq {seq} comes before the run's first, seq {last_seq + 1} (an inserted event)"
                )
            elif row_prev != prev_hash:
                problem = "prev_hash does not match the previous event (reordered, inserted or deleted events)"
            elif unchainable(episode_id) or unchainable(type_):
                problem = "episode_id or type holds U+001E or U+001F, which the hash cannot tell from NULL or a field's end (edited event)"
            elif event_hash(prev_hash, seq, event_id, ts, content := content_digest(run_id, episode_id, attempt, type_, step, payload)) != row_hash:
                problem = "hash does not match the event's content (edited event)"
            elif shard is not None:
                problem = shard.step(event_id, ts, content, orjson.loads(payload) if type_ == "run.finished" else None)
                if shard.done:
                    problem, shard = problem or shard.end(), None
            elif type_ == "run.finished":
                problem = _end_mismatch(orjson.loads(payload), seq, prev_hash)
            elif type_ == "artifact.imported" and '"log_shard"' in payload:
                shard = ShardChain.from_record(orjson.loads(payload))
                if shard is not None and shard.done:  # every event of the shard was held already
                    problem, shard = shard.end(), None
            if problem:
                walk.problems.append(ChainProblem(run_id, seq, event_id, problem))
                broken = True
                continue
            last_seq, prev_hash, last_type = seq, row_hash, type_
            if pin.get(run_id) == seq:
                walk.pinned[run_id] = row_hash
            if seq == 1 and type_ in RECORD_OPENERS:
                walk.record_streams[run_id] = RECORD_OPENERS[type_]
                if (after := announced_after(type_, orjson.loads(payload), run_id)) is not None:
                    walk.announced[run_id] = after
    if current is not None:
        _close(walk, current, (last_seq, prev_hash, last_type), shard, broken)
    return walk


# Fewer unmarked events in a row than this are walked one by one: Arrow's cost per call would
# outweigh them (a log of many short runs).
_BATCH_WALK_MIN = 64


def _cut_at_marks(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[pa.RecordBatch, bool]]:
    """The batches cut into slices, each marked or not: an unmarked one is a stretch of at least
    `_BATCH_WALK_MIN` events none of which the walk must look at alone (a run's first, its
    run.finished, a merged shard's record), to be walked a slice at a time
    (`_clean_continuation`); a marked one is everything else, walked one by one."""
    last_run = None
    for batch in batches:
        n = batch.num_rows
        if not n:
            continue
        runs, types = batch.column("run_id"), batch.column("type")
        new_run = pa.concat_arrays([pa.array([runs[0].as_py() != last_run or runs[0].as_py() is None]),
                                    pc.not_equal(runs[1:], runs[:-1])])
        marks = pc.fill_null(pc.or_(new_run, pc.equal(types, "run.finished")), True)
        imported = pc.indices_nonzero(pc.fill_null(pc.equal(types, "artifact.imported"), False))
        shards = pc.filter(imported, pc.match_substring(pc.take(batch.column("payload"), imported), '"log_shard"'))
        bounds = [-1, *sorted({*pc.indices_nonzero(marks).to_pylist(), *shards.to_pylist()}), n]
        start = 0
        for after, before in zip(bounds, bounds[1:]):
            if before - after - 1 >= _BATCH_WALK_MIN:
                if after + 1 > start:
                    yield batch.slice(start, after + 1 - start), True
                yield batch.slice(after + 1, before - after - 1), False
                start = before
        if start < n:
            yield batch.slice(start), True
        last_run = runs[n - 1].as_py()


def _one_run(batch: pa.RecordBatch, run_id: str) -> bool:
    runs = batch.column("run_id")
    return runs.null_count == 0 and pc.all(pc.equal(runs, run_id)).as_py()


def _clean_continuation(batch: pa.RecordBatch, last_seq: int, prev_hash: str) -> tuple[int, str, str] | None:
    """The batch's tail (seq, hash, type) when every event of it, all of one run, continues the
    chain from (`last_seq`, `prev_hash`) as the row-by-row walk would find: seq one more each,
    prev_hash the hash before, the hash its content computes (none of them marked: see
    `_cut_at_marks`). None when anything is otherwise, a field holding the chain's separators
    included: the row-by-row walk then names it."""
    seq, prevs, hashes, types = (batch.column(name) for name in ("seq", "prev_hash", "hash", "type"))
    n = batch.num_rows
    if seq[0].as_py() != last_seq + 1 or seq[n - 1].as_py() != last_seq + n or prevs[0].as_py() != prev_hash:
        return None
    if n > 1 and not (pc.all(pc.equal(pc.subtract(seq[1:], seq[:-1]), 1)).as_py()
                      and pc.all(pc.equal(prevs[1:], hashes[:-1])).as_py()):
        return None
    for name in ("episode_id", "type"):
        if any(pc.any(pc.match_substring(batch.column(name), mark)).as_py() for mark in ("\x1e", "\x1f")):
            return None
    if hashes.null_count or batch_hashes(batch) != hashes.to_pylist():
        return None
    return seq[n - 1].as_py(), hashes[n - 1].as_py(), types[n - 1].as_py()


def _close(walk: ChainWalk, run_id: str, tail: tuple[int, str, str], shard: "ShardChain | None", broken: bool) -> None:
    walk.tails[run_id] = tail
    if shard is not None and not broken:
        walk.problems.append(ChainProblem(run_id, tail[0], "", f"a merged shard's events end early after seq {tail[0]} (cut off)"))


@dataclass
class ShardChain:
    """A shard's own chain, rebuilt over its events folded into the run (merge.py): the
    events the run already held are replayed from the record, by their shard seq."""

    head: str
    last_seq: int
    held: dict[int, tuple[str, int, str]]
    remaining: int
    seq: int = 0
    prev_hash: str = GENESIS_HASH

    @classmethod
    def from_record(cls, payload: dict) -> "ShardChain | None":
        if payload.get("kind") != "log_shard":
            return None
        held = {seq: (event_id, ts, content) for seq, event_id, ts, content in payload["metadata"]["held"]}
        return cls(payload["sha256"], payload["metadata"]["last_seq"], held, payload["rows"] - len(held))

    @property
    def done(self) -> bool:
        return self.remaining == 0

    def _fold(self, event_id: str, ts: int, content: str) -> None:
        self.seq += 1
        self.prev_hash = event_hash(self.prev_hash, self.seq, event_id, ts, content)

    def _replay_held(self) -> None:
        while self.seq + 1 in self.held:
            self._fold(*self.held[self.seq + 1])

    def step(self, event_id: str, ts: int, content: str, finished: dict | None) -> str | None:
        self._replay_held()
        problem = _end_mismatch(finished, self.seq + 1, self.prev_hash) if finished else None
        self._fold(event_id, ts, content)
        self.remaining -= 1
        return f"in the merged shard's own chain (its seq {self.seq}): {problem}" if problem else None

    def end(self) -> str | None:
        self._replay_held()
        if (self.seq, self.prev_hash) != (self.last_seq, self.head):
            return f"the merged shard's own chain ends at seq {self.seq}, not at its recorded head (seq {self.last_seq}); events changed"
        return None


def _end_mismatch(payload: dict, seq: int, prev_hash: str) -> str | None:
    if payload.get("last_seq") is None:
        return None  # written before run.finished was stamped
    if payload["last_seq"] != seq - 1:
        return f"run.finished closes the chain at seq {payload['last_seq']}, but follows seq {seq - 1} (events moved or removed)"
    if payload.get("last_hash") != prev_hash:  # in place, but not the chain it was stamped with
        return (f"run.finished closes the chain at seq {seq - 1} with hash {payload.get('last_hash')}, but the chain's hash there "
                f"is {prev_hash} (events up to seq {seq - 1} changed, the chain hashed again)")
    return None


# The events that cite a blob by its address, and the field that holds it.
# {run}: nothing, or a filter on one run inside each branch, where the scans take it (a seal
# checks its own run's citations, not the whole log's).
_CITED = """
    SELECT run_id, seq, payload->>'request_sha256' AS sha256 FROM events WHERE type = 'model.called' {run}
    UNION ALL
    SELECT run_id, seq, payload->>'blob_sha256' FROM events WHERE type = 'artifact.imported' {run}
"""
_CITED_BLOBS = f"""
    SELECT run_id, min(seq) AS seq, sha256, count(*) AS events FROM ({_CITED})
    WHERE sha256 IS NOT NULL AND sha256 NOT IN (SELECT sha256 FROM blobs)
    GROUP BY run_id, sha256 ORDER BY run_id, seq
"""


def _values(column: pa.Array) -> Callable[[int], memoryview]:
    """Each value of a binary column as a view of its data buffer, by the column's offsets: no
    copy, and none of the per-value Arrow objects, which cost more than hashing a log's many
    small blobs (a view-typed column takes each value's buffer)."""
    width = {pa.binary(): np.int32, pa.large_binary(): np.int64}.get(column.type)
    if width is None:
        return lambda index: memoryview(column[index].as_buffer())
    offsets = np.frombuffer(column.buffers()[1], dtype=width)[column.offset:column.offset + len(column) + 1].tolist()
    data = memoryview(column.buffers()[2] or b"")
    return lambda index: data[offsets[index]:offsets[index + 1]]


def altered_blobs(batches: Iterable[pa.RecordBatch]) -> list[BlobProblem]:
    """Blobs (sha256, size, content batches) whose content no longer hashes to their address
    or has another size. Hashed here, not in SQL: hashlib is ~5x faster than DuckDB's sha256."""
    found = []
    for batch in batches:
        addresses, sizes, contents = batch.column(0).to_pylist(), batch.column(1).to_pylist(), batch.column(2)
        valid, value = contents.is_valid().to_pylist(), _values(contents)
        for index, (address, size) in enumerate(zip(addresses, sizes)):
            if not valid[index]:
                found.append(BlobProblem(address, "its content is gone"))
                continue
            content = value(index)
            if hashlib.sha256(content).hexdigest() != address:
                found.append(BlobProblem(address, "its content does not hash to its address (edited)"))
            elif len(content) != size:
                found.append(BlobProblem(address, f"{len(content)} bytes, recorded as {size}"))
    return found


# An address `blobs` shows more than once: an archive table stripped of its key, or an export
# folder two exports wrote at once. Every view that joins on blobs (the gold, the policies)
# would count each of its rows that many times.
_REPEATED_BLOBS = "SELECT sha256, count(*) FROM blobs{cited} GROUP BY sha256 HAVING count(*) > 1 ORDER BY sha256"


def blob_problems(con: duckdb.DuckDBPyConnection, runs: list[str] | None = None) -> list[BlobProblem]:
    """Every stored copy of every blob (or of those the events of `runs` cite) checked against
    its address, then every blob an event cites looked for, then every address stored more
    than once."""
    cited = "" if runs is None else f" WHERE sha256 IN (SELECT sha256 FROM ({_CITED.format(run='AND list_contains($runs, run_id)')}))"
    params = {} if runs is None else {"runs": runs}
    problems = altered_blobs(con.sql(f"SELECT sha256, size, content FROM blob_copies{cited}", params=params).to_arrow_reader(1_000))
    repeated = [
        BlobProblem(address, f"stored {copies} times (every view that joins on blobs counts it {copies} times)")
        for address, copies in con.execute(_REPEATED_BLOBS.format(cited=cited), params).fetchall()
    ]
    missing = missing_blobs(con) if runs is None else [problem for run_id in runs for problem in missing_blobs(con, run_id)]
    return problems + missing + repeated


def missing_blobs(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> list[BlobProblem]:
    """Each blob an event cites (of `run_id`, else of any run) that the log's `blobs` lack:
    the one rule verify, merge (through verify) and seal apply."""
    return [
        BlobProblem(address, f"cited by run {run} (seq {seq}, {events} event(s)) but not in the log (deleted)")
        for run, seq, address, events in (
            con.execute(_CITED_BLOBS.format(run="AND run_id = ?"), [run_id, run_id]) if run_id is not None
            else con.execute(_CITED_BLOBS.format(run=""))
        ).fetchall()
    ]


def intact_heads(log_path: Path, run_ids: Iterable[str], heads: Heads | None = None) -> dict[str, tuple[int, str]]:
    """Each stream of `run_ids` as an export reads it, held to everything `log verify` checks
    of it (`verify_log` of those streams, and of the blobs they cite); given `heads`, the hash
    each holds at the seq an export's snapshot ended at. Returns each stream's head as the walk
    computed it. Raises `LogIntegrityError` naming the first problem."""
    report = verify_log(log_path, heads, runs=run_ids)
    if report.problems:
        more = f" (and {len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
        raise LogIntegrityError(f"{report.problems[0]}{more}: the log fails verification "
                                f"(`{command_line('log', 'verify', log=log_path)}` names every problem); "
                                "nothing is written from it until it is restored")
    return report.heads


def segment_records(
    con: duckdb.DuckDBPyConnection, log_path: Path, manifests: dict[str, list[ManifestEntry] | None] | None = None
) -> list[tuple]:
    """Every segment a log knows of, as sealed_segments rows (`RECORD_COLUMNS`): the archive's
    records and the manifest lines of its live runs not yet sealed (`manifests`, when read
    already, else read now)."""
    have = {row[0] for row in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = 'archive' AND table_name = 'sealed_segments'"
    ).fetchall()}
    records: list[tuple] = []
    if have:
        columns = ", ".join(c if c in have else "NULL" for c in RECORD_COLUMNS.split(", "))
        records = [tuple(r) for r in con.execute(f"SELECT {columns} FROM archive.sealed_segments ORDER BY run_id, file_name").fetchall()]
    sealed = {(r[0], r[1]) for r in records}
    if manifests is None:
        manifests = {run_id: read_manifest(live_root(log_path) / run_id) for run_id in live_run_ids(log_path)}
    for run_id, entries in manifests.items():
        for e in committed(entries or []):
            if (run_id, e.file) not in sealed:
                records.append((run_id, e.file, e.rows, e.sha256, e.first_seq, e.last_seq, e.first_prev_hash, e.last_hash))
    return records


@dataclass
class _LiveRun:
    folder: Path
    holder: str | None
    entries: list[ManifestEntry] | None


# Events stored more than once (a segment read twice: restored after its seal, say), as runs
# of consecutive seqs stored the same number of times: one line a range, not one an event.
_DUPLICATED_RANGES = """
WITH copies AS (
    SELECT min(run_id) AS run_id, min(seq) AS seq, min(event_id) AS event_id, count(*) AS copies
    FROM events WHERE {in_scope} GROUP BY event_id HAVING count(*) > 1
),
islands AS (
    SELECT *, seq - row_number() OVER (PARTITION BY run_id, copies ORDER BY seq) AS island FROM copies
)
SELECT run_id, copies, min(seq) AS first, max(seq), count(*), min(event_id)
FROM islands GROUP BY run_id, copies, island ORDER BY run_id, first
"""

def verify_log(log_path: Path, heads: Heads | None = None, runs: Iterable[str] | None = None) -> VerifyReport:
    """Verify the log, or the streams `runs` (and the blobs they cite) only; and, given `heads`
    (recorded by an earlier verification), that each run still holds its recorded hash at its
    recorded seq."""
    heads = heads or {}
    scope = None if runs is None else sorted(set(runs))
    in_scope = "TRUE" if scope is None else "list_contains($runs, run_id)"
    params = {} if scope is None else {"runs": scope}
    # Locks and manifests first, then the snapshot: the snapshot then holds at least what the
    # manifests name (a seal in between moves files into the archive the snapshot sees).
    live, unreadable = {}, []
    for run_id in live_run_ids(log_path):
        if scope is not None and run_id not in scope:
            continue
        folder = live_root(log_path) / run_id
        holder = lock_holder(folder / "writer.lock")
        try:
            live[run_id] = _LiveRun(folder, holder, read_manifest(folder))
        except MalformedManifest as exc:  # edited: every reader refuses the log, so only this can be said
            unreadable.append(RangeProblem(run_id, None, None, str(exc)))
    if unreadable:
        return VerifyReport(len(live) + len(unreadable), 0, unreadable)  # type: ignore[arg-type]
    try:
        try:
            con = open_snapshot(log_path)  # reads each blob segment's schema already
        except ArchiveDamagedError as exc:
            return VerifyReport(len(live), 0, [ArchiveProblem(str(exc))])
        try:
            # the walk leaves DuckDB held to WALK_MEMORY_LIMIT: for the duplicates' aggregate too
            walk = walk_chains(ordered_events(con, "events", in_scope, params), pin={run_id: seq for run_id, (seq, _hash) in heads.items()})
            problems: list[ChainProblem | RangeProblem] = []
            for run_id, copies, first, last, events, event_id in con.execute(_DUPLICATED_RANGES.format(in_scope=in_scope), params).fetchall():
                if events == 1:
                    problems.append(ChainProblem(run_id, first, event_id, f"event_id stored {copies} times"))
                else:
                    problems.append(RangeProblem(run_id, first, last, f"each of these {events} events stored {copies} times"))
            con.execute("RESET memory_limit")  # one blob may be larger
            problems += walk.problems
            blobs = blob_problems(con, scope)
            has_archive = bool(con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'archive' AND table_name = 'sealed_segments'"
            ).fetchone()[0])
            records = [r for r in segment_records(con, log_path, {run_id: state.entries for run_id, state in live.items()})
                       if scope is None or r[0] in scope]
            sealed = sealed_files(con) if has_archive else {}
            archive_gaps = _archive_disagreements(con) if has_archive else {}  # keyed by run: the loop below reads its own
            output_dirs = dict(con.execute(RECORDED_OUTPUT_DIRS).fetchall())
        finally:
            con.close()
    except (duckdb.InvalidInputException, duckdb.IOException) as exc:
        # A segment, of events or blobs, too damaged to read (e.g. truncated): name the
        # damaged files, which is all that can be said until they are restored.
        damaged = [p for run_id, state in live.items() if (p := _live_problem(run_id, state, {}))]
        if damaged:
            return VerifyReport(len(live), 0, damaged)  # type: ignore[arg-type]
        if not (log_path.is_file() and f'"{log_path.resolve()}"' in str(exc)):  # the archive cut short: said below
            raise
        return VerifyReport(len(live), 0, [ArchiveProblem(f"the archive {log_path.name} is damaged: {str(exc).splitlines()[0]}")])
    except duckdb.Error as exc:
        if not str(exc).startswith(_CORRUPT_FILE):  # DuckDB's own check of each block it reads
            raise
        return VerifyReport(len(live), 0, [ArchiveProblem(f"the archive {log_path.name} is damaged: {str(exc).splitlines()[0]}")])

    broken = {p.run_id for p in problems}
    expected_end: dict[str, tuple[int, str | None]] = {}
    for run_id, _file, _rows, _sha, _first, last_seq, _prev, last_hash in records:
        if last_seq is not None and last_seq > expected_end.get(run_id, (0, None))[0]:
            expected_end[run_id] = (last_seq, last_hash)
    if log_path.is_dir():  # an export folder keeps no records; its file names hold each run's end
        expected_end.update((run, end) for run, end in exported_ends(log_path).items() if scope is None or run in scope)
    recorded = {run_id for run_id, *_ in records} | set(expected_end)
    unfinished, running = [], []
    for run_id in sorted(set(walk.tails) | set(live) | set(expected_end)):
        tail_seq, tail_hash, tail_type = walk.tails.get(run_id, (0, GENESIS_HASH, ""))
        state = live.get(run_id)
        if state is not None and state.holder is not None:
            # What the holder committed must be there and intact; only what is past its last
            # commit may be in flight.
            held_problem = _segment_problem(run_id, state, sealed)
            if held_problem:  # the holder may have moved on since: a compaction replaces files, a seal archives them, then deletes them
                held_problem = _segment_problem(run_id, replace(state, entries=read_manifest(state.folder)), _sealed_now(log_path))
            if held_problem:
                problems.append(held_problem)
            else:
                running.append(RunNote(run_id, tail_seq, f"running ({state.holder}), verified up to seq {tail_seq}"))
            continue
        live_problem = _live_problem(run_id, state, sealed)  # the cause of a chain break, if any
        if live_problem:
            problems.append(live_problem)
        if run_id in broken or live_problem:
            continue
        problem = (
            # events of no segment of its own: another run's (forged) segment holds them
            (RangeProblem(run_id, None, None, "its events are in no segment of its own (another run's segment holds them)")
             if state is None and run_id not in recorded and run_id not in archive_gaps
             and not (live_root(log_path) / run_id).is_dir()  # a run that began after the live runs were listed
             else None)
            or _tail_problem(run_id, tail_seq, tail_hash, expected_end.get(run_id), exported=log_path.is_dir())
            or _announced_problem(run_id, tail_seq, walk)
            or archive_gaps.get(run_id)
        )
        if problem:
            problems.append(problem)
        elif tail_seq and tail_type != "run.finished" and run_id not in walk.record_streams:
            pending = _unrecorded(state, run_id, sealed)
            unfinished.append(RunNote(
                run_id, tail_seq,
                f"unfinished: no run.finished after seq {tail_seq} (1..{tail_seq} verified) and no writer holds it{pending}; "
                + (f"an interrupted run: `{command_line('eval', 'resume', run_id, *output_dir_words(output_dirs.get(run_id), run_id), log=log_path)}` "
                   "finishes it" if not log_path.is_dir() else
                   # a folder is read only: its run was exported unfinished, or the export was cut
                   "read only here: finish the run in its log, then `eviscene log export-parquet` it again"),
                unrecorded=bool(pending),
            ))
        elif not tail_seq and (cut := _unrecorded_events(state, run_id, sealed)):
            # killed before its first commit was recorded: nothing to read yet (a resume finds
            # no run), all of it on disk
            unfinished.append(RunNote(
                run_id, 0,
                f"unfinished: seq {cut[0].first_seq}..{cut[-1].last_seq} reached the disk but its first commit was cut short "
                f"and no writer holds it; `{command_line('log', 'seal', log=log_path)}` records it "
                f"(then `{command_line('log', 'verify', log=log_path)}` says how to finish it)",
                unrecorded=True,
            ))
        elif not tail_seq and (left := _blobs_without_events(state, run_id, sealed)):
            unfinished.append(RunNote(
                run_id, 0,
                f"unfinished: killed before its first event reached the disk (only {len(left)} blob segment(s) did) and no "
                f"writer holds it: nothing of it resumes; its name is free for a new run, or "
                f"`{command_line('log', 'seal', log=log_path)}` clears its folder",
            ))
    problems += _head_problems(heads, walk, broken)
    troubled = {p.run_id for p in problems}  # a run's problems only here: the blobs' come after
    records = list(walk.record_streams.values())
    # a stream the walk found no event of (killed before its first commit, or all of it cut
    # off) counts as the run it was named for
    unread = {note.run_id for note in [*unfinished, *running, *problems] if note.run_id not in walk.tails}
    return VerifyReport(
        walk.streams - len(records) + len(unread), walk.events, [*problems, *blobs], unfinished, running,
        imports=records.count("import"), exports=records.count("export"),
        heads={run_id: (seq, hash_) for run_id, (seq, hash_, _type) in walk.tails.items() if seq and run_id not in troubled},
    )


def _head_problems(heads: Heads, walk: ChainWalk, broken: set[str]) -> list[HeadProblem]:
    """Each recorded head the log no longer holds (a run whose chain broke is named already)."""
    problems = []
    for run_id, (seq, recorded) in sorted(heads.items()):
        if run_id in broken:
            continue
        tail_seq = walk.tails.get(run_id, (0, "", ""))[0]
        if not tail_seq:
            problems.append(HeadProblem(run_id, seq, "a recorded head's run is not in the log (deleted)"))
        elif tail_seq < seq:
            problems.append(HeadProblem(run_id, seq, f"the run ends at seq {tail_seq}, before its recorded head (cut off)"))
        elif walk.pinned.get(run_id) != recorded:
            problems.append(HeadProblem(
                run_id, seq, f"hash {walk.pinned.get(run_id)} is not the recorded head {recorded} "
                f"(events up to seq {seq} rewritten, the chain hashed again)"))
    return problems


def _live_problem(run_id: str, state: _LiveRun | None, sealed: Mapping[tuple[str, str], str]) -> RangeProblem | None:
    if state is None:
        return None
    if state.entries is None:
        ranges = sorted((int(m.group(1)), int(m.group(2))) for n in _names(state.folder) if (m := EVENTS_FILE.match(n)))
        if ranges and not all((run_id, n) in sealed for n in _names(state.folder) if EVENTS_FILE.match(n)):
            return RangeProblem(run_id, ranges[0][0], ranges[-1][1], f"{state.folder.name}/segments.jsonl is missing: its segments are unrecorded")
        return None
    problem = _segment_problem(run_id, state, sealed)
    if problem:
        return problem
    try:
        unrecorded = unrecorded_tail(state.folder, state.entries)
    except LogIntegrityError as exc:  # an unlisted segment that cannot be read
        return RangeProblem(run_id, None, None, str(exc))
    if unrecorded.stranded:
        stranded = unrecorded.stranded[0]
        return RangeProblem(run_id, stranded.first_seq, stranded.last_seq, unrecorded.stranded_problem())
    return None


def sealed_files(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> dict[tuple[str, str], str]:
    """Each sealed segment's sha256 (None in an archive of before migration 002), by (run, file
    name), of one run or all: readers skip a live file of that name."""
    where, params = ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])
    try:
        found = con.execute(f"SELECT run_id, file_name, sha256 FROM archive.sealed_segments {where}", params).fetchall()
    except duckdb.BinderException:
        found = [(*row, None) for row in con.execute(f"SELECT run_id, file_name FROM archive.sealed_segments {where}", params).fetchall()]
    return {(run, name): sha for run, name, sha in found}


def _segment_problem(run_id: str, state: _LiveRun, sealed: Mapping[tuple[str, str], str]) -> RangeProblem | None:
    """The first committed segment not yet sealed that is missing or differs from its manifest
    line, or that bears the name of a sealed segment it is not (a second writer of the run, on
    another path to the log, wrote it: readers would skip it as sealed)."""
    for entry in committed(state.entries or []):
        if (run_id, entry.file) in sealed:
            if sealed[(run_id, entry.file)] not in (None, entry.sha256):
                return RangeProblem(run_id, entry.first_seq, entry.last_seq, f"live segment {entry.file} is not the segment "
                                    "sealed under its name (another sha256): a second writer of the run wrote it; it is kept, unread")
            continue
        path = state.folder / entry.file
        if not path.exists():
            return RangeProblem(run_id, entry.first_seq, entry.last_seq, f"segment {entry.file} is missing")
        if file_sha256(path) != entry.sha256:
            return RangeProblem(run_id, entry.first_seq, entry.last_seq, f"segment {entry.file} was altered (sha256 differs from its manifest line)")
    return None


def _sealed_now(log_path: Path) -> dict[tuple[str, str], str]:
    """The archive's sealed segments, read afresh (a seal records them before it deletes the files)."""
    if not log_path.is_file():
        return {}
    con = new_connection()
    try:
        attach_archive(con, log_path, read_only=True)
        return sealed_files(con)
    except duckdb.CatalogException:  # no seal yet
        return {}
    finally:
        con.close()


def _tail_problem(run_id: str, tail_seq: int, tail_hash: str, end: tuple[int, str | None] | None, exported: bool) -> RangeProblem | None:
    """The run's events against the end recorded for it: by its commits, or by the name of its
    `log export-parquet` file (`exported`), which holds a hash's first 16 characters only."""
    if end is None:
        return None
    end_seq, end_hash = end
    if tail_seq < end_seq:
        recorded = f"its export file's name says it ends at seq {end_seq}" if exported else f"the log committed this run up to seq {end_seq}"
        return RangeProblem(run_id, tail_seq + 1, end_seq, f"missing: cut-off tail ({recorded})")
    if exported and tail_seq > end_seq:
        return RangeProblem(run_id, end_seq + 1, tail_seq, f"events past the end its export file's name holds (seq {end_seq})")
    if tail_seq == end_seq and end_hash is not None and not tail_hash.startswith(end_hash):
        recorder = "its export file's name holds" if exported else "recorded at commit"
        return RangeProblem(run_id, end_seq, end_seq, f"the last event's hash differs from the one {recorder}")
    return None


def _announced_problem(run_id: str, tail_seq: int, walk: ChainWalk) -> RangeProblem | None:
    """A record stream holding other than what its opener announces: cut down (its commit
    records with it, so no tail check sees it) or grown."""
    after = walk.announced.get(run_id)
    if after is None or tail_seq == after + 1:
        return None
    noun = "file(s)" if walk.record_streams[run_id] == "import" else "event(s) after it"
    said = f"its first event announces {after} {noun}, the log holds {tail_seq - 1}"
    if tail_seq < after + 1:  # only an import announces events after its opener
        return RangeProblem(run_id, tail_seq + 1, after + 1, f"missing: {said} (cut off after seq {tail_seq}; "
                            "an interrupted import is finished by importing its source again)")
    return RangeProblem(run_id, after + 2, tail_seq, f"{said} (events past seq {after + 1})")


def _archive_disagreements(con: duckdb.DuckDBPyConnection) -> dict[str, RangeProblem]:
    """Per run, archived rows that no sealed-segment record covers: outside every range its
    records give, or of a run with no record at all (its records deleted, which would
    otherwise leave its rows unchecked). Records that claim rows the archive lacks show as a
    cut-off tail or a chain break. A run whose records all lack ranges was sealed before
    they were recorded (migration 002): nothing to check its rows against."""
    if not con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE database_name = 'archive' AND table_name = 'sealed_segments' AND column_name = 'first_seq'"
    ).fetchone()[0]:
        return {}
    found: dict[str, RangeProblem] = {}
    stray = con.execute(
        """
        WITH r AS (SELECT run_id, first_seq, last_seq FROM archive.sealed_segments WHERE first_seq IS NOT NULL),
        -- blob segments' records have no range ever: only events segments' tell an old seal
        rangeless AS (SELECT run_id FROM archive.sealed_segments WHERE starts_with(file_name, 'events-') EXCEPT SELECT run_id FROM r)
        SELECT e.run_id, min(e.seq), max(e.seq) FROM archive.events e
        WHERE e.run_id NOT IN (SELECT run_id FROM rangeless)
          AND NOT EXISTS (SELECT 1 FROM r WHERE r.run_id = e.run_id AND e.seq BETWEEN r.first_seq AND r.last_seq)
        GROUP BY 1 ORDER BY 1
        """
    ).fetchall()
    for run_id, first, last in stray:
        found.setdefault(run_id, RangeProblem(run_id, first, last, "in the archive but in no sealed-segment record"))
    return found


def _unrecorded(state: _LiveRun | None, run_id: str, sealed: Mapping[tuple[str, str], str]) -> str:
    """A writer killed between renaming a segment and recording it leaves the batch on disk,
    unseen; the next resume or seal records it."""
    events = _unrecorded_events(state, run_id, sealed)
    if not events:
        return ""
    return (f" (seq {events[0].first_seq}..{events[-1].last_seq} reached the disk but its commit was cut short; "
            "a resume or `eviscene log seal` records it)")


def _unrecorded_events(state: _LiveRun | None, run_id: str, sealed: Mapping[tuple[str, str], str]) -> list[ManifestEntry]:
    if state is None or state.entries is None:
        return []
    return [e for e in unrecorded_tail(state.folder, state.entries).events if (run_id, e.file) not in sealed]


def _blobs_without_events(state: _LiveRun | None, run_id: str, sealed: Mapping[tuple[str, str], str]) -> list[str]:
    """The blob segments, recorded or not, of a run folder holding no event: a writer killed
    between its first batch's blob segment and its events segment. Unfinished (its run was
    started), not a problem: a new run of the name takes the folder over (`eval run`)."""
    if state is None or state.entries is None:
        return []
    return [name for name in _names(state.folder) if BLOBS_FILE.match(name) and (run_id, name) not in sealed]


def _names(folder: Path) -> list[str]:
    try:
        return sorted(p.name for p in folder.iterdir())
    except FileNotFoundError:
        return []
