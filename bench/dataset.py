"""Dataset export benchmark: `eviscene dataset export` over N synthetic candidate episodes,
beside seed 002's algorithm written as plain Python (the BASELINE) over the same data.

A seed-style run directory of N candidate episodes is written once: cases of 2-4 rollouts,
about 80% eligible and 97% with a trajectory; the rollouts of a case share a content family,
one citation in ten is a "hot" content family that chains a few cases into one group, and
domain families must join nothing; in one case of eight the rollouts share no family at all
(where the seed can split a case and EviScene deliberately does not). Each trajectory is shaped
like the embedded agent's (~12.5 kB: the five tool schemas, a system prompt, 2-5 tool calls
with their results, the verdict; 1.4 GB of trajectory_sft.jsonl at 100,000); `--small-rows`
writes rounds 1-13's ~1 kB rows instead. Then, each in its own process so peak memory is its own:
  ours/import   eviscene import of the run directory into a fresh log
  ours/export   the whole export from the log (views, eligibility, groups, splits, files)
  baseline      seed 002's derived mode: read traces and scores, keep every eligible
                rollout with a trajectory, union-find over content families, sha256
                split, write the split files
Checks: the same accepted episodes; the same split files wherever the seed's groups keep
each case whole (elsewhere EviScene joins the case's groups; the count is printed). Prints
seconds, peak RSS and the ratios.

    python bench/dataset.py --episodes 100000
    python bench/dataset.py --episodes 100000 --small-rows

Where the export's time goes (issue 13; cProfile with a CPU-time clock and DuckDB's
EXPLAIN ANALYZE per view, 20,000 candidates of an imported run directory, on a shared
2-core machine at load 8-13, so read CPU shares, not wall seconds). Before: 7.0 s CPU
(baseline 3.7 s CPU) of which computing the dataset views ~45%: trace_runtime_ids (json_tree
over every trace, DuckDB joining the lateral json_tree back on the whole trace text) and
imported_traces each spent most of their time in the Python UDF py_text (str() of a JSON
value, ~5 us a row, 200k+ calls), imported_rows 0.55 s in `trim(line, chars)` (DuckDB's trim
with a character list is ~30x slower than ltrim on long non-ASCII lines), imported_traces
re-parsed each trace for every `->` field, and dataset_trajectories / candidate_episodes were
kept twice (temp table + export_snapshot copy); writing the files ~35%: every view result
turned into Python dicts whole (to_pylist, orjson.loads of each SFT record), each file's
records built as a list first (the garbage collector then walked the whole heap:
`_sft_row` 60 us a row), then serialized; the dataset.exported event ~15%, 1.1 s CPU of it
pyarrow importing pandas on its first `pa.array` (store/writer.py, left as is: every writer
process pays it); binding the views 0.5-1.1 s.
Changes: py_text is a SQL macro that reads JSON strings in DuckDB and calls Python only for
other values (one call per candidate left: its numeric score); the blank-line test is an
ltrim; imported_traces parses each trace once (json_extract with a list of paths); the
group-id JSON strings are written in SQL when plain ASCII (py_json_string); staging views
are computed once into their snapshot table; the files are written in one streamed pass over
each view's Arrow batches (serialize.JsonlFiles), every file open at once. Same bytes
(check_identical.sh).
After, 20k: 6.1 s CPU (baseline 3.7 s), peak 494 MiB (was 599; baseline 222); left:
trace_runtime_ids' lateral json_tree (its peak memory too), split_components' recursive CTE,
orjson parse + re-serialization of every SFT record (the canonical form sorts nested keys,
so the stored text cannot be copied), the pandas import.
Whole bench (export / baseline): 5,000 before 5.53x time (3.48 vs 0.63 s), after 3.05x (load
8) and 5.65x (load 20) time, 4.2x peak memory (291 vs 69 MiB: DuckDB and pyarrow alone hold
~200 MiB); 100,000 before 1.92x time, 2.28x peak memory (2282 vs 1000 MiB); after (load
13-19): 1.17x time (139 vs 119 s), 1.54x peak memory (1545 vs 1000 MiB); import + export
3.40x the baseline's time.
Second round (issue 13, 100,000 candidates; CPU seconds from cProfile and per view from
process_time around each view's materialization, at load 13-28, so wall seconds are ~5-10x):
the views took ~11 s CPU: split_components 2.4 (its recursive CTE re-ran the anchors/edges
joins in every iteration), trace_runtime_ids ~1.7-2.8 (DuckDB's json_tree over every trace),
imported_traces 1.6 (a json_each per trace for the evidence families), rollout_selection
0.9, candidate_episodes 0.8, dataset_trajectories 0.8-1.0; writing the files ~10 s (Python
per accepted row: orjson parse of the SFT record, four canonical lines); the import took
62.6 s CPU: the strict JSONL reader 17.6 s (a Python object hook per JSON object, for
repeated-key checks), the log writer 17 s (a pydantic payload, digest and chain hash per
file event: _prepare 7.2, drafts 3.3, seal 4.7), listing and reading the files ~12 s
(pathlib's rglob, relative_to and Path.__lt__ sorting ~9 s), json.loads of every trace 3.6 s,
the plan's digest re-hashing every file 2.5 s.
Changes: anchors and edges MATERIALIZED in split_components (2.4 -> 0.8 s CPU); a trace's
runtime ids by one orjson parse in Python (eviscene/rules/traces.py, registered as
trace_runtime_id_list; Python's json where orjson would read a value differently);
imported_traces reads the families with one JSON path per trace (1.5 -> 0.6 s CPU); the
import lists files with os.scandir/os.walk in pathlib's order, hashes each file once,
parses traces with orjson where it gives the same image_id, and queues blobs without an
event-loop trip per file. Same bytes (check_identical.sh).
After, 100,000 (two runs, load 21-28): export / baseline 0.84x and 0.75x time (48 vs 58 s,
114 vs 153 s), 1.38x peak memory (1384 vs 1000 MiB); import + export 1.83x and 1.81x.
Left (goal 0.2x export, 0.5x import + export): writing the files row by row in Python, the
import's strict JSONL check and its event per file, the JSON re-parsing across the staging
views (imported_rows, dataset_trajectories, candidate_episodes), rollout_selection, the
pandas import pyarrow makes on the first pa.array (~1 s, store/writer.py).
Third round (issue 13, writing the files; cProfile with a CPU clock, 20,000 candidates at load
2-3): the export took 5.1 s CPU (8.1 s wall; baseline 2.6 s CPU, 4.2 s wall): the views 1.65 s
CPU (wall per view: trace_runtime_ids 0.62, the dataset_trajectories and candidate_episodes
snapshots 0.45 and 0.38, rollout_selection 0.28, imported_traces 0.26, split_components 0.26),
writing 2.6 s CPU, of it Python dicts of the view rows (serialize.rows 0.52, the metadata and
accepted-episode dict comprehensions 0.40, _metadata 0.17, _sft_row 0.11), the system-tools
variant 0.38, orjson 0.26 parse + 0.16 serialization, file writes 0.17.
Changes: every line's JSON text is built by DuckDB (to_json per column; JSON columns as stored;
NaN and infinities as null, as orjson writes them) in the seed dicts' key order and
canonicalized by one orjson parse and serialization; the SFT record is parsed once and
completed by setdefault/update from a parsed object of its dataset fields; no dict per view
row; the rows are sorted before their texts are built (the sort then carries no text) and read
2,000 at a time. tests/dataset/test_dataset_serialization.py pins doubles bit for bit (20k
random ones and 1e16, 1e-7, -0.0, 5e-324...), strings with control characters and non-ASCII,
whole lines against the seed's json.dumps, and the Parquet column order. The import lists a
run directory without a Path object per file. Tried and dropped: dict(pairs) in the strict
reader's repeated-key hook (no measurable gain: the cost is Python's parser and one hook call
per object).
After: writing alone, old and new on one open export (20,000, load 11-13), 1.46-1.63 -> 1.01-1.17
s CPU; the export process at 100,000, main and this branch alternately (load 7-25): main
19.3-20.7 s CPU, 31-52 s wall, peak 1338-1399 MiB; now 17.1 s CPU (16.7-18.8 over six runs),
41-46 s wall (the load, not the code, decides the wall seconds here), peak 1345 MiB, files
byte-identical to main's; the import's plan at 20,000 3.1-3.4 -> 3.0-3.1 s CPU. Whole bench at
100,000 (load 15-20): export / baseline 0.76x time (44.7 vs 58.9 s), 1.32x peak memory (1315 vs
1000 MiB); import + export 1.90x (import 67 s).
Left: the views (~2 s CPU at 20,000, ~10 s at 100,000), orjson's parse + serialization of every
line and the system-tools variant (~1 s CPU at 20,000), and the import: one hash-chained event
and blob per file (writer + seal ~4 s CPU at 20,000) and the strict JSONL reader (~3 s).
Fourth round (issue 13, the import; cProfile with a CPU clock and py-spy, 20,000 and 100,000
candidates at load 2-18): the strict JSONL reader's cost was mostly the garbage collector, not
the parse: the import kept every parsed row of a JSONL file in a list and every parsed trace in
a dict nobody read, so each collection walked millions of live objects (main at 20,000: 1,397
collections, 9 of the oldest generation); with the rows streamed and no traces kept, the same
parse costs a fraction. The reader now parses with orjson where that provably gives Python's
reading (a repeated key drops a pair, so the line then holds more colons than orjson's
re-serialization of what it read; 19+ digit numbers and escaped colons go to Python's reader):
~1.4x faster than the hooked json.loads (20,000 SFT lines, collector off: 0.22-0.26 vs
0.32-0.34 s CPU). Trace files are read by path text (a Path per file cost ~3 s CPU under
cProfile at 100,000); the run directory's other files are filtered before they are sorted;
export lines get their newline from orjson; the system-tools variant copies its row once.
Same log events (main's and this import's compared row for row at 20,000), same export bytes
(check_identical.sh).
After, the import at 100,000 (main then this branch, one after the other, load 18): 145.6 s wall,
31.3 s CPU, peak 1,674 MiB -> 44.6 s, 17.0 s CPU, 1,321 MiB; at 20,000: 5.2 -> 2.3-3.3 s CPU. The
export process at 100,000, main and this branch alternately (load 7-10): 16.9, 15.4 -> 15.3, 14.9
s CPU (within the noise), peak ~1,310-1,330 MiB both. Whole bench at 100,000, two runs (load
11-16, 12-14): import 35.1 and 34.6 s (was 67 s), export 33.0 and 38.4 s, baseline 44.3 and
46.3 s: export / baseline 0.74x and 0.83x time, 1.36x and 1.32x peak memory (1361, 1318 vs 1000
MiB); import + export 1.54x and 1.58x (was 1.90x).
Left (goal 0.2x export, 0.5x import + export): the export's views (~10 s CPU at 100,000) and
its orjson parse + serialization per line (~5 s); the import's hash-chained event and blob per
file (writer ~7 s, seal ~6.5 s of 47 s CPU under cProfile at 100,000: DuckDB copying ~160 MB of
blobs into the archive, then re-reading every segment to check the chain) and reading 100k
files (~2 s in system calls).
Fifth round (issue 13, the export's views and peak memory; py-spy, cProfile with a CPU clock,
EXPLAIN ANALYZE per view, RSS sampled every 5 ms; 100,000 candidates at load 6-15): main's export
took 9.9-10.6 s CPU, peak 1,354-1,373 MiB. The views ~6.5 s CPU: trace_runtime_ids' Python function
ran twice per trace (DuckDB inlined the CTE and called it for the filter and again for the column:
200,000 calls), candidate_episodes read each score's `total` with a Python call (py_text of a
number), dataset_trajectories parsed every SFT record three times for its two counts, and each
view copied its rows into a temporary table. Writing the files ~3.5 s CPU: an orjson parse and a
canonical serialization per line, near their floor (~2.5 us per 1 KiB line each way). The peak:
727 MiB of temporary tables (imported_rows 105 MiB of JSONL lines, dataset_rows 95 MiB with a
second copy of every SFT record, imported_documents 64 MiB, dataset_candidates 34 MiB, ...),
then the sort of dataset_rows while the files are written.
Changes: the runtime ids' CTE is MATERIALIZED (one call per trace); imported_rows,
imported_documents, trace_runtime_ids, teacher_quality, dataset_candidates and dataset_rows stay
views (each is read once, or each reader reads its own file kind: the filter on kind reaches the
blob scan); before the files are written the exporter drops the tables only the decisions read
(release_unread, from the views dataset_files reads); dataset_trajectories reads its three fields
with one json_extract; a JSON number score is read by DuckDB (py_truthy_double: the same double as
Python's str() cast back, on 320k random and edge values). Same bytes: check_identical.sh, and
the 100,000-candidate export compared file by file with main's. The import is unchanged.
After, the export process alone at 100,000 on one imported log, alternating with main (load
6-15): 9.9-10.6 -> 8.8-9.2 s CPU, peak 1,354-1,364 -> 960-1,065 MiB.
Whole bench at 100,000, two pairs of main and this branch one after the other (load 10-14, then
8-11): main export / baseline 0.99x and 0.92x time (15.4 vs 15.6 s, 10.3 vs 11.3 s), 1.35x and
1.36x peak memory (1348, 1359 MiB), import + export 1.84x and 1.77x; this branch 0.88x and 0.81x
time (14.2 vs 16.2 s, 17.7 vs 21.9 s), 1.05x and 0.99x peak memory (1055, 990 vs 1000 MiB), import
+ export 1.72x and 1.46x (the import, unchanged, 13.6 and 14.4 s: its share moves with the load).
Left (goal 0.2x export, 0.5x import + export): the views (~5 s CPU at 100,000: the blob scan
behind every trace, ~0.5 s per read, the runtime ids' Python walk ~0.5 s, rollout_selection's
windows, split_components' recursion), the orjson parse + serialization of every line (~3 s),
~0.7 s of module imports (pandas no longer among them); the import (13-14 s wall at load ~12: 100k files read and hashed, the strict
JSONL check, one hash-chained event and blob per file, then the seal copying the blobs into the
archive and re-reading every segment).
Sixth round (issue 13, the import; per-phase CPU clocks around each function, cProfile with a
CPU clock, EXPLAIN ANALYZE and timed CREATE TABLE per view, 100,000 candidates at load 3-10): the
import took 9.4-10.0 s CPU (14-20 s wall: the load decides the rest): planning 2.5-2.9 (reading
100k files ~1.1, all system calls; the strict JSONL check 0.9, the SFT file 0.73 of it, at ~7 us
a line, orjson's parse and re-serialization near their floor; trace parses 0.25; the plan's
digest 0.15), the 100k drafts 1.0 (pydantic's validation 0.45), the writer ~2.2 (numbering and
hashing 0.7; Parquet segments 1.3, of which 0.36 a dictionary pyarrow tried and min/max
statistics it computed for every blob's content), the seal 2.5-2.8 (the blob insert 1.0, of
which 0.45 DISTINCT ON carrying every blob's content through an aggregate, also ~400 MiB of the
import's peak; the events insert 0.36; DuckDB's commit writing ~150 MB of blobs 0.9; the chain
check 0.45); and ~0.9 of the whole was the garbage collector walking the plan (every file's
content and metadata, alive until the write ends) at each collection the drafts and the writer's
batches set off (the write 3.2-3.6 s CPU, 2.5-2.6 with collection off). The export's views:
imported_files parsed each payload ten times (0.43 s CPU); collection costs the export nothing.
Changes: the write runs with the objects that exist when it starts frozen out of collections
(gc.freeze, undone after it, failed or not); the seal deduplicates blobs only when the segments'
sha256 column shows a repeat; blob segments keep no dictionary or statistics for the content
(0.52 -> 0.16 s CPU for the segments of 100k files); imported_files reads its nine fields with
one json_extract_string (0.43 -> 0.18 s CPU). Same bytes (check_identical.sh).
Tried and dropped: pydantic's model_construct for the drafts (slower: 0.71 vs 0.45 s per 100k),
the strict reader parsing 2,000 lines per orjson call (slower: 1.47 vs 0.68 s for the SFT file),
imported_traces reading all its paths with one json_extract (no gain: its ~0.6 s CPU is its
expressions, on one thread because 100k rows are one DuckDB row group).
After, main and this branch alternately at 100,000 (process CPU seconds; wall seconds follow the load):
the import at load 1.3-3.0 (all changes): 9.8 and 9.4 -> 8.6 and 8.9 s CPU, 11.1 and 10.2 -> 10.3 and
9.5 s wall, peak 1,426 and 1,346 -> 968 and 1,246 MiB; earlier pairs at load 5-10 before the freeze:
9.9-10.0 -> 9.1-9.7 s CPU, peak 1,127-1,607 -> 969-1,145 MiB. The export (only imported_files
changed for it) 10.3-10.8 s CPU both, peak 914-1,010 vs 947-1,004 MiB: its changes are within the
noise. Baseline 11.6-13.0 s CPU, 1,000 MiB. At load 1.3-3.0, two rounds: main export / baseline
0.90x and 0.83x time (10.8 vs 12.0 s, 10.9 vs 13.1 s), 0.98x and 1.00x peak memory, import + export
1.82x and 1.60x; this branch 0.80x and 0.84x, 0.98x and 0.97x, import + export 1.66x and 1.56x.
Whole bench at 100,000, main then this branch before the freeze (load 4.6-7.1, then 5.2-7.0): main
import 17.1 s, export 17.8 s, baseline 18.0 s (export / baseline 0.99x time, 0.95x peak memory;
import + export 1.94x); this branch import 12.9 s, export 17.0 s, baseline 12.9 s (1.31x, 0.94x;
2.31x): the baseline's own wall time moved 40% between the two runs at that load.
Left (goal 0.2x export, 0.5x import + export): no single large cost; the import's floor is the
log itself (each file read, hashed, written as a chained event and a blob in a Parquet segment,
then copied into the DuckDB archive: ~5 of its ~8.7 s CPU; the strict JSONL check ~0.9), the
export's the views (~5-6 s CPU, no view over 1.2 s) and the orjson parse + serialization of
every line (~3 s).
Seventh round (issue 13, writing the files; CPU clocks around each view and the writing,
EXPLAIN (ANALYZE) per view, py-spy and cProfile; 100,000 candidates at load 0.3-1.5): the export
took 9.7-10.8 s wall, 11.3-12.7 s CPU. The views 5.9 s wall: candidate_episodes 1.3 (0.56 of it the
Python walk of each trace for its runtime ids), imported_traces 1.06, split_components 1.03 (its
label propagation 0.65), dataset_trajectories 0.71, rollout_selection 0.67 (three windows over
every candidate). Writing the files 2.8-2.9 s wall, 3.7-3.8 s CPU, of which ~0.7 s was the orjson
parse and canonical serialization of the ~200k metadata lines (episode_metadata,
accepted_episodes, excluded_episode_metadata): built as text in DuckDB, then read and written
again in Python only to sort their keys. Binding the views ~0.7 s, module imports ~0.6 s.
Changes: the metadata files' lines are written by DuckDB as canonical JSON
(eviscene/exports/canonical_sql.py: keys sorted, doubles and escapes as orjson writes them; a
JSON column's value goes to Python only when it is not null, a boolean or a string) and copied
out of each Arrow batch's text buffer (JsonlFiles.add_lines; a Parquet copy still parses each
line and puts its keys back in the seed's order). rollout_selection ranks only the eligible
rollouts and takes each case's count and best rollout from a GROUP BY: 0.50-0.64 -> 0.37-0.41 s
on its own. Same bytes: check_identical.sh, and the 100,000-candidate exports (derived and
--one-rollout-per-case) compared file by file with main's.
After, the export process alone, main then this branch, three pairs (load 0.3-0.9): 9.82, 9.75,
10.75 -> 9.46, 9.55, 9.99 s wall; 11.5, 11.5, 12.7 -> 10.8, 10.9, 11.4 s CPU. Clocked inside the
export (two pairs): writing the files 2.82-2.90 -> 1.83-2.06 s wall (3.66-3.79 -> 2.52-2.71 s CPU),
rollout_selection 0.73-0.77 -> 0.59-0.64 s wall (1.10-1.15 -> 0.61-0.68 s CPU). Whole bench,
main then this branch, twice (load 0.8-1.4): export / baseline 0.62x and 0.60x -> 0.54x and
0.57x time (11.3 vs 18.3 s and 10.7 vs 17.8 s -> 9.1 vs 16.9 s and 10.4 vs 18.3 s), peak memory
1.01x and 1.10x -> 1.11x and 1.03x (peaks move ~100 MiB between runs of the same code); import +
export 1.31x and 1.24x -> 1.14x and 1.15x (the import is unchanged).
Tried and dropped: split_components with pointer jumping (each episode also takes its label's
label, so fewer rounds): 0.60 -> 0.47 s, the same components, not worth a harder recursion; the
runtime ids as an Arrow-batch function instead of one call per trace: no gain (the walk itself
is the cost).
Left (goal 0.2x export, 0.5x import + export): the views (~5.5 s wall: the runtime-id walk, the
JSON paths of imported_traces and dataset_trajectories, the components' recursion), the SFT
rows' orjson parse and two serializations each (the row and its system-tools variant), binding
the views and imports (~1.3 s), and the import (~10 s: the log's hash-chained event and blob per
file).
Then the binding: the export created every dataset view (DuckDB binds a view when it is created,
expanding every view below it) and then, view by view, dropped it and created its table, which
binds its SQL again. On the bundled release's log the first pass was 0.55 s of a 1.7 s export
(dataset_summary alone 0.13 s). Now each dataset view is created once, in dependency order, as
its table (binding over the tables below it), its snapshot or its view (exports/dataset_views.py
`_compute`). Same bytes (check_identical.sh; the 100,000-candidate export file by file). Main
then this code, alternately (load 0.7-0.9): the bundled release's export 1.66-1.71 -> 1.06-1.18 s
wall (three pairs); the 100,000-candidate export 9.51 and 9.82 -> 8.24 and 8.61 s wall, 10.6 and
11.1 -> 9.5 and 10.0 s CPU (two pairs). Whole bench (load 0.4-1.2): at 100,000 export / baseline
0.54x (main, 10.3 vs 19.2 s) -> 0.50x and 0.51x (9.0 vs 17.8 s, 8.6 vs 17.0 s), peak memory
0.98x -> 1.00x and 0.98x, import + export 1.13x -> 1.06x and 1.06x; at 5,000 4.17x and 3.51x
(export 2.07, 1.91 s) -> 2.98x and 2.46x (1.42, 1.65 s), peak memory 4.1-4.4x both.
Eighth round: rows of the real size, and peak memory read right. The rows were ~1 kB with no
tool schemas; the embedded agent's are 9.7-17.3 kB (the bundled release's) with five, so the
bench now writes rows of that shape (`--small-rows` keeps the old ones). Peak memory was
getrusage's ru_maxrss, which Linux carries across exec: a phase's child reported the bench's
own peak whenever that was higher, as it was once the generator held 100,000 real-size rows in
lists (every phase then read ~6.3 GB). Now each phase reads its VmHWM and the generator writes
each row as it makes it. The small rows' figures stand (their phases outgrew the parent).
Where the export's time went at 100,000 real-size rows (1.4 GB of trajectories; export 32-34 s
on a standing log; EXPLAIN ANALYZE per view, clocks around each statement): the
dataset_trajectories snapshot ~11 s (reading the trajectory file's blob 2.1 s, each line's cast
to JSON 1.5 s, the episode id parsed out of each row in a pass of its own 1.4 s, the three fields
2.4 s, the token estimate and tool-call count 1.3 s, the copy into the snapshot ~3 s);
candidate_episodes 3.9 s and imported_traces 3.1 s, ~2 s of each the blobs table's scan, which
decompresses the 1.4 GB blob beside the traces' (a filter on another column does not avoid it);
dataset_summary 3.35 s, a LEFT JOIN that read every imported file of the export to count two
kinds of an accepted release, which a derived export has not; writing the files 9-11 s (orjson's
parse and two serializations of each row ~5 s, the sort carrying the records 2.3 s, the writes
1.9 s: a 13 kB line is more than the 8 KiB buffer, so each was its own write call).
Changes: dataset_summary reads only the two kinds it counts (3.35 s -> nothing to read);
dataset_trajectories reads an imported row's episode id in the json_extract of its three
fields; JSONL files are written through a 1 MiB buffer (2 GB in 13 kB lines: 1.92 -> 0.58 s
here). Same bytes (check_identical.sh). Main then this code, alternately on one 100,000-row log
(load 1.0-1.3): 31.9, 33.8, 34.3 -> 28.0, 30.1, 30.5 s wall, peak 4.80 -> 4.59-4.72 GB.
Whole bench, main's code then this code, each with this bench (load 0.5-1.1): real-size rows,
export / baseline 0.61x -> 0.53x time (43.4 vs 71.3 s -> 36.3 vs 67.8 s), peak memory 0.65x ->
0.63x (4.80 -> 4.67 GB; the baseline 7.40 GB), import + export 1.39x -> 1.29x; small rows 0.52x
-> 0.44x time (10.0 vs 19.3 s -> 9.4 vs 21.2 s), peak memory 1.01x -> 0.96x, import + export
1.16x -> 1.00x.
Tried and dropped: the blob segments' bytes in snappy instead of zstd (writing the 1.4 GB
segment stayed ~12 s: first touches of fresh memory cost more than the codec, ~1 s per 1.4 GB
on this machine); a memo of the system-tools block (2.4 us a row; cProfile had put it at 5 s).
Left: the import of a 1.4 GB file (46-58 s, peak 6.5 GB: the strict JSONL check ~16 s, writing
its blob segment ~12 s, the seal 13-16 s), every further copy of the records (~1 s per copy of
1.4 GB: the snapshot, the join and the sort before the files), the blobs table's scans.
Ninth round: the import of the 1.4 GB trajectory file. Where its time went (clocks and
getrusage around each step, perf's page-fault and CPU samples): planning 13-20 s, of which the
strict JSONL check 10.4 s (orjson's parse 2.5 and re-serialization 2.0, the scan for runs of 19
digits 1.9 (a translated copy of every line), the two scans for an escaped colon 1.5, the lines
split into one list first 1.3 s and 1.4 GB); writing 20-26 s, of which the blob segment's
pq.write_table 15-18 s with 12-13 s of it in the kernel: pyarrow's default allocator, mimalloc,
backs its arenas with transparent huge pages, and this machine's kernel compacts memory to find
them (THP defrag "madvise"; ~1,490 huge-page faults an import; the same write alone took 5-18 s
from run to run), and the batch's three blobs were joined into
one buffer, a copy of the 1.4 GB; the seal 11-17 s (DuckDB's insert of the blob 6.9 s, its commit
4.3 s: two copies into its string blocks and the zstd of the checkpoint).
Changes: pyarrow's default pool is the system allocator wherever eviscene is imported first
(eviscene/__init__.py sets ARROW_DEFAULT_MEMORY_POOL unless the user has): the write 4-5 s,
no huge-page faults (jemalloc and mimalloc without eager arena commit gave the same); the
check asks orjson's re-serialization for "e+" instead of scanning the line for 19 digits (an
integer outside [-2**63, 2**64) is the only number orjson reads differently, and it reads it
as a float of magnitude 2**63 or more, which it writes in exponent form) and looks for an
escaped colon with one scan, then yields the lines one at a time (10.4 -> 7.9 s, the plan's
peak 2.99 -> 1.62 GB); a value of a MiB or more is its own Arrow chunk, its buffer the bytes
object itself. The export reads the same log (check_identical.sh: IDENTICAL) and is as fast as
before with the system allocator (28.2, 30.1 -> 28.3, 29.5 s on the standing log).
Main's code then this code, alternately, each phase of this bench on one run directory of
100,000 real-size rows (load 1.0): import 54.1, 57.9 -> 37.3, 38.4 s, peak 6.50 -> 4.92 GB;
import + export / baseline 1.26x, 1.30x -> 1.07x, 1.05x; export / baseline 0.48x, 0.53x ->
0.53x, 0.51x (the export's code is unchanged: 33-41 s beside a 69-76 s baseline).
Tried and dropped: isolating the large blob in a row group of its own at the seal, so that the
traces' scans would not decompress it (a filter that selects none of a vector's rows skips
its strings: 0.02 s instead of 1.9 s). DuckDB gave it its own row group only with a CHECKPOINT
between two inserts, and an insert outside the seal's one transaction would let readers see the
blob twice (archive and live segment) for a moment. A faster pre-scan by regular expression
(10x slower than translate). Left: the seal (11-12 s), checking the big file on one core (a
second process would save ~3 s of its ~8), the export's copies of the records.
Tenth round: where a derived export of 100,000 real-size rows spends 23-31 s on a standing log
(py-spy with native frames and threads; EXPLAIN (ANALYZE, FORMAT JSON) of each snapshot): the
views 16-19 s, of which the dataset_trajectories snapshot 8.9 s (the trajectory file's blob
decompressed 1.6 s and carried through two joins 1.5 s, its lines split and cast to JSON 1.1 s,
the three fields 1.9 s, the counts 1.0 s, the copy into the snapshot 1.0 s), imported_traces
2.5 s (1.7 s of it the blobs table's scan, which decompresses the 1.4 GB blob beside the
traces) and the candidate_episodes snapshot 2.8 s (1.9 s of it trace_runtime_ids reading every
trace document again: a second such scan); writing the files 9-13 s, of which ~4 s in write(2)
on the main thread (2.1 GB into the page cache) and ~5 s orjson's parse and two serializations.
Changes: imported_traces computes each trace's runtime ids as it reads the document and
trace_runtime_ids takes them from it (one scan of the blobs less); JsonlFiles hands each file's
lines a MiB at a time to a writer thread (os.writev of the lines as they are, no copy into a
buffer); each query's next Arrow batch is computed by DuckDB in a thread of its own while
Python serializes the one before (serialize.read_ahead); the bench syncs the page cache before
each phase. Same bytes (bench/check_identical.sh, now kept here: every file of the 100,000-row
export compared with main's). Main's code then this code, alternately on one log, five pairs,
the page cache synced and dropped before each (load 0.7-1.1): the export 27.0 s median
(24.2-31.5) -> 23.5 s (22.5-26.2), the views 17.1 -> 15.0 s, the files 9.3 -> 8.2 s.
Then imported_rows finds the files it wants first (a MATERIALIZED CTE), so the 1.4 GB
trajectory file goes through one hash join instead of two (DuckDB built both on it, copying it:
0.74 + 0.79 s -> 0.98 s), and tool_call_count takes json_array_length of each message's
tool_calls where they lie instead of extracting them (written and parsed again: 1.8 -> 1.35 s
over the 96,837 records). Same bytes (check_identical.sh, main's code against this). The
candidate_episodes snapshot now takes 0.86 s (was 2.8). The previous commit then this code,
alternately on a fresh log of the same rows, three pairs (load 1.2-1.6): 23.8, 22.5, 23.0 ->
21.0, 21.3, 21.8 s.
The whole bench did not show it: four runs each, alternately, export 35.8, 36.3, 40.8, 32.8 s
(main) and 33.9, 41.8, 32.3, 42.0 s (this code) beside baselines of 54-68 s (export / baseline
main 0.57-0.67x, this code 0.56-0.68x; import + export 1.27-1.57x and 1.22-1.55x; the import itself 40-55 s). Inside the bench every phase
runs 10-15 s slower and far less steadily than the same phase on a standing log (a fresh
import of the same rows took 31 s and its first export 26.8 s), with or without the sync; the
cause is not found.
Left: the blobs table's two decompressions of the 1.4 GB blob (the traces' scan, the
trajectory file's lookup) and the copy of it into the remaining join's hash table, the trajectory records' parse in DuckDB and again in orjson, and the
main thread's serialization (orjson holds the GIL: only a process would run it in parallel, and
it would take 1.4 GB of records through a pipe).
Eleventh round (December 4th): what stands between the export and 0.2x. The whole bench (load
1.0): import 47.9 s, export 34.0 s, baseline 57.3 s (0.59x; import + export 1.43x); the export
alone on a standing log 25-32 s, of which the views 15-19 s and writing the files 9.5-13 s.
Clocks around each dataset view: dataset_trajectories 11.6 s wall for 11.6 s CPU, imported_traces
4.5 s for 4.6 s: one core. DuckDB parallelizes a pipeline by its source's row groups (122,880
rows), and both start from one row: the blobs table's 100k rows are one row group, and
imported_rows unnests one blob. Timed piece by piece: the 1.4 GB blob's decompression 2.0-2.4 s
(`WHERE sha256 = <constant>`: a neighbouring blob by the same filter 0.01 s, so DuckDB fetches
only the selected rows' strings); imported_traces pays it again, because a join's pushed filters
(min/max and a bloom filter on sha256, min/max on size when joined on it too) are optional, for
skipping row groups only, and the big blob shares the traces' row group; the split and unnest
~0.1 s, the line's JSON cast 1.2 s, the join carrying the blob ~1 s, the fields, counts and copy
into the snapshot ~6.7 s. Writing the files (py-spy): orjson's parse of each record 3.4 s, its two
canonical serializations 2.8 s, the first batch (the sort carrying the records) 1.3 s, on the main
thread; the writer thread's writev ~6 s beside it. The import (py-spy, 47 s): planning 14.5 s
(the strict JSONL check 8.6 s, hashing 2 s), the blob segment's write 9-10 s (pq.write_table: ~5.4
s copying the 1.4 GB value through its encoder, data page and output stream, zstd 3.2 s), the
seal 8.5 s (DuckDB copying it into its string storage, then zstd again, 7.5 s).
Tried and dropped: the lines copied into a file-backed scratch database attached with 8,192-row
row groups (12 row groups; the JSON work then ran on both cores, 4.0-4.8 s wall for 7-9 s CPU),
but the copy, compressed as it is written, took 6.8 s: 10.8 s against 11.4 s. An in-memory
database attached with ROW_GROUP_SIZE kept one row group; a MATERIALIZED CTE with one reader
streams into it (no parallel scan); the size added to the join (its min/max excludes the big
blob) is optional too; json_extract takes no wildcard path beside others, so the tool calls
cannot be counted in the fields' parse.
Change: the SFT records reach orjson as their UTF-8 bytes in the Arrow batch (serialize.
utf8_values) instead of Python strings, which orjson encodes back to UTF-8 first: 0.80 -> 0.61
s CPU for 20,000 of this bench's records (296 MB, twice); same bytes (check_identical.sh). The
export cannot show it here: writing the files from one open export, the old way and this one
alternately, three times each, the main thread's CPU ran 8.7-13.2 s for the same code.
Left, and what the goal needs: each export decompresses the trajectory file whole (twice) and
parses every record on one thread, then again in Python. 0.2x (~12 s here) leaves no room for
that: the import, which already parses every line for its strict check, would have to keep each
JSONL line as a row of its own (its episode id and counts beside it, in row groups DuckDB reads
in parallel), a change to the log's schema, its seal, verification and merge.

Twelfth round (December 4th, later): the import's strict JSONL check. Timed step by step on the
bench's 1.4 GB trajectory file: orjson's read and write of each line 4.3-4.7 s, the two colon
counts 1.1 s, the search for an escaped colon 0.8 s, and the search for "e+" in what orjson
wrote 1.45 s: CPython's two-byte search steps through text full of "e"s nearly a byte at a
time. Change: "+" is looked for first (one byte: memchr), the pair only where one is, which is
the same test. The check, old and new alternately in one process (two pairs): 7.8-8.7 -> 6.5-6.8
s. The whole import phase, main's code and this code alternately (three pairs, load 0.8-1.05):
35.7-38.2 s (median 38.0) -> 34.2-36.5 s (median 35.5). Then the whole bench once (load ~1):
import 40.5 s, export 29.5 s (the export's code unchanged: the last round's 34.0 s was this
machine's spread), baseline 57.3 s: export 0.51x the time, 0.64x the memory; import + export
1.22x. The escaped-colon search cannot be narrowed so (the bench's lines hold 46 million
unicode escapes, so a cheaper first test finds one in every line).
Then the check on every CPU (eviscene/rules/jsonl_parts.py): a file of 64 MiB or more is cut at
newlines into a part per CPU, the first read in the import's process, each other one by a
`python -m eviscene.rules.jsonl_parts` child sent its bytes through a pipe (a thread writes them
while the parent reads its own part), which sends back its line count, the episode id of each
row and its first fault's line; the parent yields them in file order and raises a fault by
reading that one line again, so rows, line numbers and errors are iter_jsonl_bytes's (tested on
faults in every part, byte-order marks, blank lines, a child that cannot start or fails). Not
multiprocessing: spawning imports the caller's main module again, forking a process with
threads can deadlock. The check of the 1.4 GB file, one CPU and every CPU alternately (three
pairs, load 0.5): 6.80, 6.81, 6.82 -> 4.02, 4.27, 4.17 s. The import phase, the commit before
and this code alternately (three pairs, load 1.0): 43.2, 35.5, 35.2 -> 32.8, 32.9, 32.1 s; the
same artifact events (all 100,004 compared). The whole bench once more (load 1.1): import 39.9
s, export 30.1 s, baseline 55.3 s: 0.54x, import + export 1.27x (this bench's phases move by
more than the change). Left: the file's sha256 (0.9 s) before its check; none of this comes
near what the 0.5x goal needs (above).

Thirteenth round (December 5th): a floor beside the baseline. The bench now also times reading
the trajectory file and writing as many bytes as the export wrote (2.18 GB), nothing parsed:
what any export of these rows pays on this machine before it computes anything. One run at a
load average of 6 (other work on both cores): import 65.6 s, export 39.5 s, baseline 102.6 s,
floor 7.1 s: export / baseline 0.38x, floor / baseline 0.07x. So the 0.2x goal sits above what
the disk and page cache cost; what stands between is computation (the records' JSON, parsed in
DuckDB for the views and again in orjson for the files, each on one core), as the eleventh
round found.

Fourteenth round (December 5th, later): the export's error order, score rows across sources
(two window functions and a join over the candidates in dataset_problems and
candidate_episodes). 20,000 candidates, the round's starting commit then this one, back to
back at a load average of ~1.2: export 5.00 s / 4.98 s, baseline 5.57 s / 5.48 s: no change.
100,000 candidates, one run at a load average of 1.2-1.5 on this session's machine: import
33.8 s, export 26.9 s, baseline 34.6 s, floor 0.77 s: export / baseline 0.78x, import + export
1.75x, peak memory 0.62x. The baseline ran in 34.6 s where earlier rounds' quiet runs took
55-57 s, and the export in about the time it took then (29.5-30.1 s): this machine runs the
plain-Python loop faster, not the export slower, so the ratio moved with the machine.

Fifteenth round (December 5th, evening): what a hostile review's fixes cost. The export now
refuses a trajectory_sft row that is no SFT record (dataset_trajectories reads each message's
type and its content's type: two more parses of every record's messages) and a score float()
refuses. 20,000 candidates, the round's starting commit then this one, back to back while the
test suite ran on the other core (load ~3.3): import 8.12 s and 8.17 s, export 6.68 s and 7.02 s
(+5%), baselines 7.34 s and 6.45 s (their spread is the load's). An earlier pair at a higher
load gave 0.97x and 1.08x export / baseline. The import's seal now also looks for the blobs
its events cite (its own run's, by a filter inside each branch): no change measurable here.

Sixteenth round (December 6th): what refusing credentials costs the import. Every imported
file is now searched for a key this machine holds and for an OpenAI or Google key's shape
(bytes.find for the key's first characters, then the pattern where one is found: the regex
alone, an alternation with no literal prefix, read 200 MB in 2.3 s), the run manifest with
every net `redact` casts. The plan of 20,000 candidates (299 MB), main's code then this code
alternately, process CPU while the test suite ran on the other core: 1.52, 1.95 -> 2.20, 2.21 s;
the search alone ~0.35 s per 200 MB of trajectory text, so ~2.5 s of the 1.4 GB file's import
(~7% of it), on one core.

Seventeenth round (December 6th): what refusing a JSON-escaped key costs the import. A key may
hide behind escapes of its own characters (`\\u0073k-…`), which JSON readers decode: the search
now also reads each line holding an escape of a character a key or a known secret is made of,
decoded (escapes of other characters, every non-ASCII letter's and Go's `\\u003c`, decide
nothing and are skipped by the pattern). On this bench's trajectory file (4,000 episodes, 57 MB,
1.8 million escapes, none of them a key character's), three runs each, process CPU: the bytes'
search 0.065-0.078 s, with the escapes' 0.101-0.118 s: +0.035 s per 57 MB, ~0.9 s of the 1.4 GB
file's import (~2%), on one core. On Go-written text full of `\\u003c` (38 MB): 0.04 -> 0.16 s.

Eighteenth round (December 7th): what holding an export's sources to `log verify` costs. The
export now verifies the streams it reads (chain, recorded end, every blob they cite hashed)
before it computes anything. At 20,000 candidates the import's 60,003 blobs: 1.35-1.74 s wall,
then 1.02-1.18 s once each blob is hashed as a view of its batch's buffer rather than through
a per-value Arrow object. The whole bench, this code (before that change) then the round's
starting code, while a CI run used the other core (load 3.8-4.0): export 12.00 s / 9.73 s,
baseline 11.83 s / 11.94 s: 1.01x / 0.82x (import + export 2.04x / 1.66x; the import's 12.18 s /
10.08 s is the load's, its code unchanged), floor 0.13x both. The check is ~1 s of the 2.3 s;
the rest moved with the load.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

def _peak_rss_mib() -> float:
    """This process's own peak RSS (VmHWM). Not getrusage's ru_maxrss: Linux carries it across
    exec, so a phase's child reported its parent's peak whenever that was higher."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


WORDS = ("hail", "Madrid", "storm", "car", "windows", "photo", "posted", "2024", "Herald", "Valley", "reporter", "séance",
         "flood", "—", "·", "archive", "caption", "street", "police", "crowd", "протест", "night", "fire", "bridge")
SYSTEM_PROMPT = ("You are an image fact-verification agent. Decide whether the image shows what its claim says. " * 8).strip()


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(low, high)))


def _trajectory(rng: random.Random, case: str, episode: str, rollout: int, tools: list[dict]) -> dict:
    """A trajectory shaped like the embedded agent's (~12.5 kB on average; the bundled
    release's average 13.5 kB): the tool schemas, a system prompt, the claim, 2-5 tool calls
    each with its result, the verdict asked for and given."""
    names = [tool["function"]["name"] for tool in tools]
    messages = [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM_PROMPT}]},
        {"role": "user", "content": [{"type": "text", "text": f"Verify this image. Claim: {_text(rng, 10, 40)}"}, {"type": "image"}]},
    ]
    for call in range(1, rng.randrange(3, 7)):
        name = rng.choice(names)
        arguments = {"query": _text(rng, 3, 8)} if "search" in name and name != "reverse_image_search" else {}
        messages.append({"role": "assistant", "content": [], "reasoning_content": _text(rng, 8, 30), "tool_calls": [
            {"id": f"call-{call}", "type": "function", "function": {"name": name, "arguments": arguments}}]})
        messages.append({"role": "tool", "tool_call_id": f"call-{call}", "name": name,
                         "content": [{"type": "text", "text": f"[ev-{call}] " + _text(rng, 20, 520)}]})
    messages.append({"role": "user", "content": [{"type": "text", "text": "Give your judgment now as one JSON object. " + _text(rng, 40, 80)}]})
    verdict = rng.choice(("authentic", "out_of_context", "manipulated", "unverifiable"))
    messages.append({"role": "assistant", "content": [{"type": "text", "text": json.dumps(
        {"verdict": verdict, "confidence": round(rng.random(), 2), "rationale": _text(rng, 20, 60)})}]})
    return {"episode_id": episode, "case_id": case, "images": [f"/images/{case}.jpg"], "messages": messages,
            "prompt_group_id": "pg-" + hashlib.sha256(case.encode()).hexdigest()[:24], "rollout_index": rollout,
            "schema_version": "eviscene-trajectory-sft-v1", "source_metadata": {"release_id": "bench", "source_run_id": "bench-run"},
            "tools": tools, "verdict": verdict}


def _small_trajectory(rng: random.Random, case: str, episode: str, number: int) -> dict:
    """The ~1 kB trajectory of rounds 1-13 (no tool schemas, one tool call), for their figures."""
    return {"episode_id": episode, "case_id": case, "images": [f"/images/{case}.jpg"], "tools": [], "messages": [
        {"role": "system", "content": [{"type": "text", "text": "Verify the image."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": f"Claim {number}: " + "words " * rng.randrange(5, 60)}]},
        {"role": "assistant", "content": [], "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "text_search", "arguments": {"query": case}}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "text_search", "content": [{"type": "text", "text": "ev-0: page"}]},
        {"role": "assistant", "content": [{"type": "text", "text": '{"verdict": "authentic"}'}]},
    ]}


def make_run_dir(root: Path, episodes: int, seed: int = 7, small_rows: bool = False) -> None:
    from eviscene.tools.specs import ALL_TOOLS, tool_spec  # here: the baseline's process imports no project code

    tools = [tool_spec(name) for name in ALL_TOOLS]  # the five schemas every trajectory carries (~2.8 kB)
    rng = random.Random(seed)
    unique_pool = episodes * 16  # a case's own content: rarely seen again
    hot_pool = max(1, episodes // 20)  # content that chains a few cases into one group
    (root / "traces").mkdir(parents=True)
    (root / "run_manifest.json").write_text(json.dumps({
        "run_id": "bench-run", "git_commit": "bench", "benchmark": {"release_id": "bench", "release_stage": "frozen_eval"},
        "agent": {"decision_policy_version": "unified-react-v1"},
    }))
    # each row written as it is made: the parent forks every phase, so it stays small
    with open(root / "trajectory_scores.jsonl", "w") as scores, open(root / "trajectory_sft.jsonl", "w") as sft:
        written, case_number = 0, 0
        while written < episodes:
            case = f"case-{case_number:06d}"
            case_number += 1
            rollouts = min(rng.randint(2, 4), episodes - written)
            disjoint = rng.random() < 0.125  # rollouts cite no common family
            shared = f"content:{rng.randrange(unique_pool):08x}"
            for r in range(rollouts):
                episode = f"{case}--r{r:03d}"
                families = [f"content:{rng.randrange(unique_pool):08x}"] + ([] if disjoint else [shared])
                if rng.random() < 0.1:
                    families.append(f"content:hot{rng.randrange(hot_pool):06x}")
                families.append(f"domain:site{rng.randrange(50)}.org")
                trace = {"image_id": episode, "case_id": case, "decision_policy_version": "unified-react-v1", "state": {
                    "runtime_case": {"case_id": case, "image_sha256": hashlib.sha256(case.encode()).hexdigest()},
                    "investigation_state": {"evidence": [{"evidence_id": f"ev-{k}", "source_family": f} for k, f in enumerate(families)]},
                }}
                (root / "traces" / f"{episode}.json").write_text(json.dumps(trace))
                eligible = rng.random() < 0.8
                scores.write(json.dumps({"episode_id": episode, "case_id": case, "total": round(rng.random() * 2, 3),
                                         "training_eligible": eligible, "training_exclusion_reasons": [] if eligible else ["incorrect_result"]}) + "\n")
                if rng.random() < 0.97:
                    sft.write(json.dumps(_small_trajectory(rng, case, episode, written) if small_rows else _trajectory(rng, case, episode, r, tools)) + "\n")
                written += 1


# --- BASELINE: seed 002's algorithm as plain Python (not project code) ---------------------

def baseline(run_dir: Path, out: Path, seed: str = "ifv-policy-v1", train_ratio: float = 0.8, validation_ratio: float = 0.1) -> int:
    scores = {}
    for line in (run_dir / "trajectory_scores.jsonl").read_text().split("\n"):
        if line.strip():
            row = json.loads(line)
            scores[str(row.get("episode_id") or row.get("case_id", "")).strip()] = row
    trajectories = {}
    for line in (run_dir / "trajectory_sft.jsonl").read_text().split("\n"):
        if line.strip():
            row = json.loads(line)
            trajectories[row["episode_id"]] = row
    meta = {}
    for path in sorted((run_dir / "traces").glob("*.json")):
        trace = json.loads(path.read_text())
        episode = str(trace.get("image_id") or path.stem).strip()
        score = scores.get(episode, {})
        evidence = trace["state"]["investigation_state"]["evidence"]
        meta[episode] = {
            "case_id": trace["state"]["runtime_case"]["case_id"],
            "families": sorted({e["source_family"] for e in evidence if e["source_family"].startswith("content:")}),
            "eligible": bool(score.get("training_eligible", False)),
            "reasons": [str(r) for r in score.get("training_exclusion_reasons", []) or []],
            "score": float(score.get("total", 0.0) or 0.0),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        }
    # derived mode: every eligible rollout with a trajectory (no per-case selection)
    episodes = [e for e in sorted(meta) if meta[e]["eligible"] and e in trajectories]
    parent = {e: e for e in episodes}

    def find(x: str) -> str:
        if parent[x] != x:
            parent[x] = find(parent[x])
        return parent[x]

    members_of = defaultdict(list)
    for e in episodes:
        for f in meta[e]["families"]:
            members_of[f].append(e)
    for members in members_of.values():
        for m in members[1:]:
            a, b = find(members[0]), find(m)
            if a != b:
                parent[max(a, b)] = min(a, b)
    components = defaultdict(list)
    for e in episodes:
        components[find(e)].append(e)
    rows = {"train": [], "validation": [], "test": []}
    for members in components.values():
        payload = {"episodes": sorted(members), "families": sorted({f for e in members for f in meta[e]["families"]})}
        group = hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:20]
        value = int.from_bytes(hashlib.sha256(f"{seed}:{group}".encode()).digest()[:8], "big") / 2**64
        split = "train" if value < train_ratio else "validation" if value < train_ratio + validation_ratio else "test"
        for e in members:
            rows[split].append({**trajectories[e], "case_id": meta[e]["case_id"], "split": split, "split_group_id": group})
    out.mkdir(parents=True, exist_ok=True)

    def write(name: str, found: list) -> None:
        (out / name).write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in found))

    for split, found in rows.items():
        found.sort(key=lambda r: r["episode_id"])
        write(f"{split}.jsonl", found)
    split_of = {r["episode_id"]: (r["split"], r["split_group_id"]) for found in rows.values() for r in found}
    write("episode_metadata.jsonl", [
        {"episode_id": e, **{k: v for k, v in meta[e].items() if k != "eligible"}, "split": split_of[e][0], "split_group_id": split_of[e][1]}
        for e in episodes
    ])
    accepted = set(episodes)
    write("excluded_episode_metadata.jsonl", [
        {"episode_id": e, **meta[e], "trajectory_sft_rows": int(e in trajectories)} for e in sorted(meta) if e not in accepted
    ])
    return len(episodes)


# --- FLOOR: what any export of these rows costs on this machine, before any work on them ----

def copy_floor(source: Path, out: Path, size: int) -> int:
    """Read `source` and write `size` bytes of it (cycled) into a file of `out`: the reading and
    writing an export of the same size does whatever it computes, nothing parsed. Returns the
    bytes written."""
    out.mkdir()
    written = 0
    with (out / "copy.jsonl").open("wb") as sink:
        while written < size:
            with source.open("rb") as reader:
                while written < size and (chunk := reader.read(min(1 << 24, size - written))):
                    sink.write(chunk)
                    written += len(chunk)
    return written


def _size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


# --- phases, each in a child process ---------------------------------------------------------

def phase(name: str, work: Path) -> dict:
    started = time.perf_counter()
    if name == "import":
        from eviscene.imports import import_path
        from eviscene.log import EventLog
        result = import_path(EventLog(work / "log.duckdb"), work / "run")
        count = result.files
    elif name == "export":
        from eviscene.exports.dataset import ExportOptions, export_dataset
        from eviscene.log import EventLog
        manifest, _ = export_dataset(EventLog(work / "log.duckdb"), ExportOptions(out_dir=work / "ours", runs=["bench-run"]))
        count = manifest["accepted_episode_count"]
    elif name == "floor":
        count = copy_floor(work / "run" / "trajectory_sft.jsonl", work / "floor", _size_of(work / "ours"))
    else:
        count = baseline(work / "run", work / "baseline")
    return {"phase": name, "seconds": time.perf_counter() - started, "peak_mib": _peak_rss_mib(), "count": count}


def _child(name: str, work: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--phase", name, "--work", str(work)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--phase", choices=["import", "export", "baseline", "floor"])
    parser.add_argument("--work", type=Path)
    parser.add_argument("--small-rows", action="store_true", help="~1 kB trajectories without tool schemas (rounds 1-13's figures)")
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.work)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        clock = time.perf_counter()
        make_run_dir(work / "run", args.episodes, small_rows=args.small_rows)
        print(f"{args.episodes} synthetic episodes written in {time.perf_counter() - clock:.1f} s")
        results = {}
        for name in ("import", "export", "baseline", "floor"):
            os.sync()  # what the phase before left dirty is written now, not on the next phase's clock
            results[name] = _child(name, work)
        for r in results.values():
            label = {"baseline": "BASELINE (seed 002 in plain Python)", "floor": "floor (the export's bytes copied)"}.get(
                r["phase"], f"ours/{r['phase']}")
            unit = "bytes" if r["phase"] == "floor" else "rows"
            print(f"{label:<38} {r['seconds']:8.2f} s   peak {r['peak_mib']:8.0f} MiB   ({r['count']} {unit})")
        whole, joined = compare(work / "ours", work / "baseline")
        export, base = results["export"], results["baseline"]
        total = export["seconds"] + results["import"]["seconds"]
        print(f"same accepted episodes: yes; same split files on the {whole} episodes whose seed groups keep their cases whole: yes;"
              f" {joined} episodes in seed groups that split a case, joined by EviScene")
        print(f"export / baseline: {export['seconds'] / base['seconds']:.2f}x time, {export['peak_mib'] / base['peak_mib']:.2f}x peak memory")
        print(f"import + export / baseline: {total / base['seconds']:.2f}x time")
        print(f"floor / baseline: {results['floor']['seconds'] / base['seconds']:.2f}x time (reading the trajectory file and"
              " writing the export's size of it, nothing parsed: no export of these rows takes less here)")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def compare(ours: Path, base: Path) -> tuple[int, int]:
    """Assert the same accepted episodes, and split files equal (episode, split, group, in
    file order) on the episodes whose seed group shares no case with another group.
    Returns (episodes compared, episodes in groups that split a case)."""
    accepted = [r["episode_id"] for r in _lines(ours / "episode_metadata.jsonl")]
    assert accepted == [r["episode_id"] for r in _lines(base / "episode_metadata.jsonl")], "ours and the baseline accept different episodes"
    splits = ("train", "validation", "test")
    base_rows = {s: _lines(base / f"{s}.jsonl") for s in splits}
    groups_of_case: dict[str, set[str]] = defaultdict(set)
    for found in base_rows.values():
        for r in found:
            groups_of_case[r["case_id"]].add(r["split_group_id"])
    # A seed group is joined with another by EviScene when one of its cases also sits in another group.
    joined_groups = {g for groups in groups_of_case.values() if len(groups) > 1 for g in groups}
    kept_whole = {r["episode_id"] for found in base_rows.values() for r in found if r["split_group_id"] not in joined_groups}
    compared = 0
    for s in splits:
        pick = lambda rows: [(r["episode_id"], r["split"], r["split_group_id"]) for r in rows if r["episode_id"] in kept_whole]
        mine = pick(_lines(ours / f"{s}.jsonl"))
        assert mine == pick(base_rows[s]), f"{s}.jsonl differs from the baseline where the seed keeps cases whole"
        compared += len(mine)
    return compared, len(accepted) - compared


if __name__ == "__main__":
    main()
