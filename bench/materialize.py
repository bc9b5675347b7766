"""Materialize benchmark: every view and the whole run directory over synthetic logs of
10k and 100k episodes (~40 events each), beside a plain Python pass over the same events
(read every event once and tally per-episode outcomes) measured in the same run.

    python bench/materialize.py [--episodes 10000 100000]
    python bench/materialize.py --generate-into /tmp/log.duckdb --episodes 100000   # once
    python bench/materialize.py --log /tmp/log.duckdb                                # then time it
    python bench/materialize.py --log /tmp/log.duckdb --run-dir /tmp/run-1           # and keep the run directory

Where the time and memory went (cProfile, per-view CREATE timings and per-file laps at 10k
episodes, 410k events, on the shared 2-core machine at a load average of ~20; 100k is ten
times each):
- materialize=True copied every view the run directory needs into a temporary table, 33 of
  them, in ~10 s: tool_calls 3.6 s, trace_audit_failures 2.1 s, episode_evidence 1.8 s,
  model_calls 1.7 s, episodes 1.2 s, episode_metrics 1.0 s; the rest under 1 s each.
  `steps` (every payload of the log behind a join) was the largest table: without it the
  process peaks 125 MiB lower per 10k episodes, and its readers scan the log instead.
- traces: ~16 s of ~32 s. The SQL that assembles each episode's steps array ~6 s; the rest
  Python: one future per file (10k futures, thread start-up and lock hand-offs ~3 s),
  pathlib joins ~1.4 s, serialization ~0.8 s, and every serialized trace queued ahead of
  the writer threads (15 KB each: 1.5 GB at 100k when the disk lags).
- the eight tabular files ~3 s, SFT and perception files ~2 s, the two look-ups before
  the export (run manifest, imported files) ~0.8 s.
Now `steps` stays a view (`eviscene.views.KEPT_AS_VIEWS`), traces are serialized and
written in chunks of 256 on the writer threads with at most 8 chunks pending, and DuckDB's
share of a materializing process is 1GB (`EVISCENE_MATERIALIZE_MEMORY`; it was 2GB, and a
100k export peaked at 2.7 GiB). Output bytes are unchanged (10k run directories compared
file by file, old and new code, same log). Same 10k log, alternating runs in one shell
(load average 23-28), per-file laps of the run directory: with `steps` a view 34.2 s and
33.6 s, peak 726 and 713 MiB; as a temporary table 39.9 s and 44.5 s, peak 799 and 802 MiB.
Whole materialize_run, old code then new, same log: 48.0 s, 903 MiB (load 26.9) and
59.0 s, 713 MiB (load 23.0) -- times at these loads vary by more than the change.

100k episodes (3.2M events), one generated log, each checkout's bench run by its own
interpreter; compare the ratios to the plain Python pass of the same run and the peaks, not
the seconds (the shared machine's load moved between 7 and 16 within minutes):

     episodes     events generate s  views s materialize s python pass s  ratio  peak MiB  load
old    100000    3200003        1.3    182.2         184.4          27.0   6.84      2700  18.4
old    100000    3200003        0.6    332.3         332.6          59.3   5.61      1895  28.1
old    100000    3200003        0.0     25.8          69.3           3.7  18.70      1931   7.7
old    100000    3200003        0.1     48.5         136.5          11.9  11.49      1936   9.2
new    100000    3200003        0.1     33.8          63.9           6.7   9.54      1943  14.1

Where materialize's time went at 100k (per-view CREATE and per-file laps, load ~8): the
views it reads ~52 s (model_calls 9.4, episode_evidence 8.2, tool_calls 8.0, whose two
window functions over 800k rows are ~11 s of operator time, trace_audit_failures 7.7,
episode_metrics 3.2, post_rollout_rewards 3.0), the eight tabular files ~13 s, SFT and
perception ~4 s, traces ~32 s. Spilling to disk under the 1 GB limit cost much of the
views' time: with a 6 GB limit they took ~37 s. Since then:
- each trace file's bytes come from one ordered query per slice of 5,000 episodes, the
  text put together in SQL (payloads verbatim, strings through to_json, which escapes as
  orjson does but for nine control characters, sent to canonical_json) and written from
  views of the slice's Arrow buffer: the trace lap went from ~32 s to ~17 s (load ~16);
- a temporary table materialize does not write is dropped once every view reading it is
  made (tool_calls' ~700 MB first): materialize alone peaks at ~1.5 GiB, not 1.6 GiB.
The peak column is the whole bench process's, set while it computes all 59 views.

Issue 13, where the views' and traces' time went at 100k (one generated log; main's code and
this one in one session, interleaved; EXPLAIN ANALYZE per view, CPU seconds of the process
beside wall, since wall at these loads varies more than the changes):
- tool_calls: its two windows (~2.5 s each) sorted every column they carried, the results'
  observation, sources and data included; model_calls' row_number (~1.7 s) the whole parsed
  payload. Both now number the calls over their keys and join the payload columns after
  (the same join: a call id reused in an episode still pairs each call with every result
  of its id). CREATE CPU s, load ~5: tool_calls 4.9 -> 4.0, model_calls 2.4 -> 2.1.
- episode_evidence: ~2.3 s of its ~3 s was normalize_url (Python) over 300k rows; it now
  runs once per distinct URL (the rollouts of a case see the same pages): 2.9 -> 1.7 CPU s.
- traces: the tables only the files before them read (~410 MiB of the 1 GB limit;
  in-memory tables 467 -> 57 MiB) are dropped first, so the trace queries no longer evict
  and read back the log's blocks: iterating the trace texts 15-18 s -> 9 s, writing them
  24-25 s -> 16.5 s (load ~4), and materialize peaks ~280 MiB lower.
- measured and left: strftime of the TIMESTAMPTZ ts goes through ICU, 4.7x slower than
  formatting make_timestamp(epoch_us(ts)) in isolation, yet no different over the trace
  queries (10.1 and 9.8 CPU s); creating 100k trace files is the kernel's (50k files took
  1.5 s or 12.6 s by the disk's writeback, Python's open and os.open alike); the eight
  tabular files are 3.1-3.5 CPU s now.
Per phase of materialize (the bench's own flow, one process each, same log):

              views s  views cpu s  tabular s  traces s  traces cpu s  peak MiB  load
    main         16.7         21.5        3.3      13.1          17.2      1462   2.8
    new          11.9         18.6        3.3      12.8          20.7      1185   2.6
    main         17.5         22.2        3.3      18.9          17.4      1447   2.5-5.6
    new          17.6         17.7        3.2      11.9          13.9      1166   4.4

The bench, interleaved main / new (`--log`, same log):

     episodes     events generate s  views s materialize s python pass s  ratio  peak MiB  load
main   100000    3200003        0.1     54.2          79.8           8.5   9.44      1903   9.4
new    100000    3200003        0.1     43.3          67.5           8.7   7.74      1896   9.8
main   100000    3200003        0.1     24.1          43.7           3.2  13.86      1914   4.0
new    100000    3200003        0.1     17.1          29.0           3.6   7.97      1908   2.8
main   100000    3200003        0.0     15.4          33.0           2.7  12.36      1898   2.2
new    100000    3200003        0.0     12.4          31.7           2.6  12.05      1892   2.4
main   100000    3200003        0.1     15.3          39.6           2.9  13.87      1891   2.3
new    100000    3200003        0.1     19.3          40.6           4.3   9.54      1910   3.0
main   100000    3200003        0.1     24.1          39.5           3.0  13.37      1890   3.1
new    100000    3200003        0.0     13.5          34.4           2.7  12.64      1892   3.0

main   100000    3200003        0.1     15.2          31.0           2.7  11.63      1901   1.4
new    100000    3200003        0.0     12.9          28.3           2.8   9.94      1897   1.3
main   100000    3200003        0.0     15.2          46.3           2.7  17.28      1911   2.6
new    100000    3200003        0.0     12.2          44.1           2.6  17.00      1897   3.0

(The first pair's new run had the view changes only; main moved under the first ten runs,
the new code then sat on the older main; the last four are main 9f305df and this code on it.)
materialize: main 31.0-79.8 s, new 28.3-67.5 s; over the last six pairs, main 38.9 s and new
34.7 s on average; the views 15.2-24.1 s and 12.2-19.3 s. The goal (< 30 s) is met in two
runs of six at load ~1-3, and the trace files' writes swing a run by ~15 s with the disk's
writeback; the bench's peak (~1.9 GiB) is set by its all-views pass, not by materialize.

Issue 13, next round: where materialize's time goes at 100k now (the same generated log;
per-phase laps of `_write_run_dir` and per-view CREATE timings, EXPLAIN ANALYZE per view,
perf and py-spy; load 1.5): 38.1 s, 55.9 CPU s, peak 1142 MiB. The views 14.7 s (22.0 CPU s:
tool_calls 4.7, trace_audit_failures 3.0, model_calls 2.2, episode_evidence 2.1,
episode_metrics 1.6, run_results 1.5, episodes 1.2, post_rollout_rewards 1.1,
sft_export_rejections 1.1, gold_sources 0.9 -- its normalize_url over 75k URLs 0.8 --, the
rest under 0.4 each); the eight tabular files 4.8 s; SFT 2.2 s and perception 1.4 s; the
traces 14.7 s (24.8 CPU s), of which putting the texts together 5.9 s (8.8 CPU s, ~0.4 s per
slice of 5,000 episodes) and the rest creating 100k files.
- "the disk's writeback" was not it: this file system (ext4) has no journal, and ext4 then
  skips, for every new inode, each inode of the group deleted in the last 60 s (360 s while
  its inode table block is dirty), reading that inode's block each time (perf: 60% of the
  samples in recently_deleted() under find_inode_bit). 100k files of 10 bytes in a new
  folder: 4.4 s; right after deleting 100k files: 54 s of system CPU. A bench that deletes
  its run directory (as this one does) slows the next run's trace lap by 10-40 s for
  minutes: `--run-dir` keeps it, and the runs below delete nothing.
- without deletions, creating the files is still the kernel's: 100k files of 15 KB took
  9.9-11.4 s of system CPU on four threads with open() (they contend for the folder),
  7.4-8.3 s on one thread with os.open/os.write. The trace files are now written on one
  thread with os.open/os.write (no buffered file object): the trace lap's CPU 17.9-25.4 s
  (main) -> 14.4-19.3 s.
- SFT and perception records joined the release root and each image path with pathlib
  (~0.8 CPU s per 100k records); now once per distinct path: 3.0-4.1 s -> 2.0-3.2 s.
- measured and left: run_results' `payload->>'stage'` is 0.2-0.3 CPU s over a plain scan of
  the 900k model calls' payloads (0.13 s), and neither json_extract_string nor a contains()
  test before it is cheaper. DuckDB's memory limit: the views spill ~80 MB at 1GB; views
  alone (wall / CPU s, process peak) at 1GB 15.1 / 23.1 and 14.4 / 22.3 (1.13 GiB), 1.5GB
  13.6 / 20.9 and 13.2 / 20.3 (1.57 GiB), 2GB 13.8 / 20.9 and 12.2 / 18.7 (1.82 GiB): ~1.5 s
  for ~450 MiB, left at 1GB. Trace texts and tabular files are each a few small costs now.
Per phase of materialize, interleaved (run directories kept, nothing deleted meanwhile):

              views s  views cpu s  traces s  traces cpu s  total s  total cpu s  peak MiB  load
    main         21.8         22.1      17.1          17.9     48.0         48.8      1148   3.9
    new          26.4         25.1      18.0          17.3     53.5         51.3      1146   4.3
    main         20.9         20.8      19.6          25.4     49.2         54.5      1147   4.3
    new          17.9         22.7      11.9          16.2     36.8         46.1      1139   3.4
    main         17.2         19.2      13.9          18.7     39.1         45.6      1148   3.4
    new          17.0         19.2      13.4          16.4     38.9         43.9      1157   3.2
    main         15.0         22.0      15.8          25.2     39.4         56.3      1148   2.7
    new          14.1         21.1      11.8          16.5     33.6         45.7      1149   2.3
    main         14.7         21.3      12.0          18.6     34.5         48.0      1150   2.1
    new          14.2         20.9      10.3          14.4     30.9         41.9      1149   1.9
    main         16.7         24.8      15.7          25.3     42.3         60.4      1138   2.0
    new          15.8         23.2      13.9          19.3     37.5         50.5      1143   1.9

(The first two new runs had the trace writer change only; the last pair is the final code.)
The bench, interleaved, each interpreter running this file with `--run-dir`:

     episodes     events generate s  views s materialize s  cpu s python pass s  ratio  peak MiB  load
main   100000    3200003        0.1     16.7          40.7   57.1           4.2   9.69      1904   1.6
new    100000    3200003        0.1     17.9          34.5   47.7           5.4   6.43      1909   1.5
main   100000    3200003        0.1     15.9          36.4   51.8           4.7   7.68      1897   1.7
new    100000    3200003        0.0     15.9          32.5   44.6           4.0   8.03      1897   1.8

materialize over the six pairs with both changes (load 1.5-3.4): main 38.7 s and 53.2 CPU s
on average (34.5-42.3 s), new 34.7 s and 45.7 CPU s (30.9-38.9 s); its own peak unchanged
(~1.15 GiB). The goal (< 30 s) is not met on this 2-core machine: ~42-45 CPU s remain, the
views' ~20 and the kernel's ~8 for the trace files among them.

Issue 13, third round (the same generated log; EXPLAIN ANALYZE of the heaviest views and of
one slice of the trace query, then each change timed against the old SQL in one process,
alternating, three times each; load 4-6 from another engineer's benchmarks):
- trace_audit_failures, 2.6 -> 1.0 CPU s: its unanswered_tool_call branch ran json_each over
  the 900k model calls' tool_calls and a NOT EXISTS over the values, which DuckDB decorrelates
  by grouping the 800k (run, episode, id) values and joining twice; the list is now parsed
  by from_json, unnested, and anti-joined with the answered calls.
- trace texts, 9.2 -> 6.4 CPU s (iterating all 100k, same bytes: 8.8-9.4 and 6.1-6.7): each
  row's text was a chain of `||`, which copies every intermediate string (~10 per step row,
  3.1M rows); it is one concat() now (no piece can be NULL: ts, type and payload are not
  nullable, the rest coalesced). A slice of 5,000 episodes: 0.60 -> 0.39 CPU s, its step
  projection 0.31 -> 0.06 s of operator time.
- tried and dropped (< 0.1 CPU s each): overlapping_model_calls' lag window as a self-join on
  call_index - 1 (the profile gave the window 3.3 s of operator time, yet the view took 1.05
  CPU s with it and 0.97 without); tool_calls' counting-frame window (is_duplicate) as
  row_number() > 1 (4.6 vs 4.5 CPU s).
- measured and left: tool_calls 4.4 CPU s (parsing 1.6 M payloads ~1.6 s, its two windows
  ~2 s of operator time, both needed for call ids reused in an episode); model_calls 2.1,
  episode_evidence 1.8 (its arg_min over 800k unnested sources ~1.3 s of operator time),
  episode_metrics ~1.8, sft_export_rejections ~1.0 (json_each like the branch above; a
  from_json rewrite would save ~0.5 s); each tabular file is its query and orjson (the
  largest, post_rollout_rewards, 1.4 s); the trace files' creation ~8 s of system CPU.
Per phase of materialize, interleaved (run directories kept under new names, nothing deleted):

              views s  views cpu s  traces s  traces cpu s  total s  total cpu s  user s  sys s  load
    main         24.3         23.8      27.7          17.5     63.8         49.2    35.8   13.9   5.7-6.1
    new          34.3         21.7      22.2          14.9     71.0         46.1    33.4   13.0   6.1-5.9
    main         27.9         25.7      26.4          16.4     68.2         51.3    38.7   13.0   5.9-6.1
    new          37.5         23.7      25.2          15.8     75.7         48.1    34.3   14.1   6.1-5.7

The bench, interleaved, each interpreter running this file with `--run-dir` (load before
the run, then the bench's own column after it):

     episodes     events generate s  views s materialize s  cpu s python pass s  ratio  peak MiB  load
main   100000    3200003        0.0     14.7          50.5   52.6           3.8  13.42      1900   2.2/4.8
new    100000    3200003        0.0     21.0          42.5   44.9           5.1   8.27      1903   4.8/3.5
main   100000    3200003        0.1     17.0          34.1   47.7           5.9   5.81      1902   3.5/2.2
new    100000    3200003        0.1     18.3          84.2   53.4           5.7  14.85      1915   2.2/5.2
main   100000    3200003        0.1     44.2          90.2   58.4          13.3   6.79      1901   5.2/5.7
new    100000    3200003        0.1     50.6          85.2   51.9          15.0   5.66      1918   5.7/5.8

materialize's CPU: main 52.9 s on average (47.7-58.4), new 50.1 s (44.9-53.4); per phase
~3 CPU s less (views ~2, traces ~1.6, user time 3.4 s less). Wall at load 4-6 on two cores
says nothing (34-90 s either way); the goal (< 30 s) is not met: ~46 CPU s remain, ~13 of
them the kernel's. The run directories of main-1 and new-1 (100k traces, every file) are
identical under diff -r.

Issue 13, fourth round (the same log). Per phase of materialize at load 1.4 before it: views
12.8 s (19.3 CPU s), the ten tabular, SFT and perception files 6.4 s (CPU as much: Python, one
thread), traces 8.9 s (12.3 CPU s), 28.3 s in all; the bench's own figure 30.1-30.5 s, 41.7 CPU s.
- the tabular files, 4.1-4.5 -> 2.3-3.3 CPU s (the eight of them, old and new alternating in one
  process, three pairs, load 1-2): a dict per row (to_pylist of each column, lists of structs
  the slowest) and orjson per row are gone: each row's line is written by DuckDB as the very
  bytes canonical_json writes (eviscene/exports/canonical_sql.py: keys sorted, to_json's
  strings and doubles where they match orjson's, canonical_json itself for the rest) and each
  Arrow batch's text is copied to the file in one write. Tried first and dropped: DuckDB's
  JSON text read back by orjson and re-serialized (as the dataset export does), 4.7 -> 4.4 s:
  orjson's parse of the float-laden lines cost what the dicts did.
- sft_export_rejections, 1.08-1.79 -> 0.38-0.57 CPU s, medians 1.25 -> 0.42 (its CREATE over the
  materialized model_calls; old and new SQL alternating, three pairs in each of three
  processes, load 1.4-1.9): json_each over the 900k calls' tool_calls, each field of each call
  parsed again, is now one from_json of the list (its fields kept JSON: a non-string id reads
  as `->>` did), unnested. The same rows as the old SQL on the 100k log, and on a copy of its
  model_calls with every seventh call's tool_calls replaced by a malformed shape (48,762 rows,
  EXCEPT ALL empty both ways).
- episode_metrics, 1.85 -> 1.32 CPU s (views-phase means, load 2.5-4.5): episode_evidence was
  OR-joined with gold_sources twice (visited_gold and evidence_gold, ~0.4 s of operator time
  each); once now, in a materialized CTE both read. Its four correlated count subqueries are
  grouped counts left-joined (~0.14 s).
- post_rollout_rewards, 1.17 -> 0.77 CPU s: step_ids was list() of the built 'episode:step'
  strings ordered by step (0.83 s of operator time over 900k model calls); the integer steps
  are listed in order and named after.
- tried and dropped: episodes with each payload parsed once (json_extract_string with a list
  of keys; a ->> per field parses again): 0.75 -> 0.64-0.70 CPU s, under the 0.2 s bar, its
  three payload scans (0.1-0.35 s each) stay. run_results' first judgment from model_calls'
  parsed stage: 1.2-1.3 -> 0.65-0.75 CPU s materialized, but the view queried plainly (and
  run_summary over it) then computes model_calls' window and json_transform: 1.5 -> 2.3 CPU s,
  so left. run_results' marks split into a typed-events group and a judging join: 1.18 -> 1.31.
  Trace files written by two threads, or with os.writev and O_EXCL (20k files, alternating):
  no faster; creating files in one folder is the kernel's, one at a time.
- measured and left: the trace phase (a slice of 5,000 episodes: ~0.2 s of operators, the sort
  and the steps' projection the largest, ~0.1 s more turning it into Arrow and slices); its
  writer thread was busy 8.5 s of the phase's 13.3 s at load 2.8.
The bench, main (77bbff1) and this round's code alternating, each interpreter running this
file with `--run-dir` (nothing deleted in between; load before each run 1.4-1.7):

     episodes     events generate s  views s materialize s  cpu s python pass s  ratio  peak MiB  load
main   100000    3200003        0.1     14.3          32.4   44.2           3.6   9.03      1897   1.6
new    100000    3200003        0.1     12.1          23.0   32.2           4.7   4.87      1899   1.5
main   100000    3200003        0.0     12.2          24.1   33.4           5.4   4.48      1900   1.7
new    100000    3200003        0.0     11.1          21.9   30.6           3.3   6.57      1896   1.6
main   100000    3200003        0.1     13.7          26.6   36.6           3.2   8.33      1902   1.6
new    100000    3200003        0.1     13.4          25.6   35.7           3.9   6.55      1900   1.8
main   100000    3200003        0.2     13.0          28.6   38.5           3.8   7.51      1909   1.7
new    100000    3200003        0.0     15.3          27.8   38.8           4.2   6.63      1892   1.6
main   100000    3200003        0.1     15.9          30.1   41.5           3.7   8.15      1904   1.4
new    100000    3200003        0.0     12.2          23.6   33.1           3.8   6.28      1900   1.4
main   100000    3200003        0.1     15.6          31.5   42.9           5.0   6.31      1914   1.4
new    100000    3200003        0.1     14.8          30.2   41.7           4.6   6.51      1901   1.7

materialize over the six pairs: main 28.9 s and 39.5 CPU s on average (24.1-32.4 s), new 25.4 s
and 35.4 CPU s (21.9-30.2 s); five of the six new runs under 30 s. The same code's CPU moves by
~10 s from run to run (the kernel's share: each run creates 100k files and 2 GB of dirty
pages). Every file of the first pair's run directories is identical (diff -r).

December 7th: materialize now holds the run to what `log verify` checks (its chain walked, the
blobs it cites hashed, its recorded end, duplicated ranges, segments) before it writes the
directory. That check alone, on the 10k log (320k events): 1.35 s of CPU. Materialize at 10k,
the code before and the check run in a thread while the directory was written, alternately
while a CI run used the other core (load 5.9-6.3): 4.5, 6.2, 5.8 s (3.3, 4.8, 4.6 s of CPU) ->
7.7, 10.8, 8.9 s (6.6, 8.3, 7.8 s of CPU), peak 640 -> 900 MiB. In one process on a quiet machine
(load 0.2-1), three rounds of no check / the check first / the check in a thread: 4.7, 4.7, 7.4 s
/ 5.7, 7.2, 7.2 s / 6.7, 7.8, 6.8 s (CPU 5.3, 5.4, 7.9 / 6.6, 8.1, 8.0 / 8.0, 9.2, 8.0 s): the
thread won nothing (the walk holds the GIL the writing's Python needs) and cost more CPU, so the
check now runs first. 100k was not run again: by the 10k figures the check adds ~13 s of CPU
there, so the < 30 s goal this bench met is likely lost until the walk is cheaper or runs in a
process of its own.

December 8th, 100k (the bench's generated log, 3.2M events), materialize alone in a process of
its own: the check peaked at 3.1 GiB, set by its one `ORDER BY run_id, seq` of every payload
(DuckDB sorts it whole, and keeps every block of the log it read cached). The walk now reads
slices (`verify.ordered_events`: runs grouped up to 250k events, a longer run cut at the
quantiles of its seqs) under a 512 MiB DuckDB limit (lifted for a slice whose payloads do not
fit: a Parquet row group is read whole). Alternating with the code before (load 1.4-1.6):

              materialize s   cpu s   peak MiB      check alone s  cpu s  peak MiB
    before    24.8 35.0 70.9  34-83   3061-3109     8.7 8.7        12.1   3057-3088
    now       36.9 32.5 31.0 42.2  41-53  1186-1209 10.4 9.6       13-14  955-976

The bound costs ~1-2 s of CPU at 100k (blocks evicted and read again across slices); sliced
without it the check took 11.1-11.6 s of CPU at 1.24 GiB. DuckDB's sha256 in the walk's query
(both digests, compared in Arrow) took 0.50 s of wall for 320k events beside 0.62 s for the
whole Python walk on two cores: not worth it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from eviscene.events import (
    ArtifactImported,
    EpisodeFinished,
    EpisodeScheduled,
    EpisodeStarted,
    GateDecided,
    JudgmentMade,
    ModelCalled,
    PerceptionReported,
    RunFinished,
    RunStarted,
    SourceSeen,
    ToolCalled,
    ToolCallRequest,
    ToolReturned,
)
from eviscene.exports.run_dir import materialize_run
from eviscene.log import EventLog
from eviscene.store import EventDraft
from eviscene.views import view_definitions

LABELS = ["authentic", "out_of_context", "manipulated", "unverifiable"]
TOOLS_PER_EPISODE = 8
RUN_ID = "bench-run"


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _gold(cases: int) -> bytes:
    rows = []
    for c in range(cases):
        rows.append({
            "case_id": f"case-{c:06d}",
            "label": LABELS[c % 4],
            "reference_chain": {
                "sources": [{"source_id": f"s{c}-{k}", "url": f"https://site{k}.example/{c}", "content_sha256": f"{c:060d}{k:04d}",
                             "role": ["origin", "bridge", "context"][k]} for k in range(3)],
                "facts": [{"fact_id": f"f{c}-{k}", "statement": "fact", "source_ids": [f"s{c}-{k}"]} for k in range(2)],
                "bridges": [{"bridge_id": f"b{c}", "source_id": f"s{c}-1", "reference_image_sha256": f"img{c}"}],
            },
        })
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _episode(e: int, case: int, rollout: int, request_sha: str) -> list[EventDraft]:
    episode_id = f"case-{case:06d}--r{rollout:03d}"
    events: list = [EpisodeStarted(attempt=1, started_at="2026-11-30T00:00:00+00:00"),
                    PerceptionReported(backend="bench", ocr_text=f"Claim about place {case} on 1 May 2024")]
    for t in range(TOOLS_PER_EPISODE):
        call = ToolCallRequest(id=f"call-{t}", name="visit", arguments={"url": f"https://site{t % 3}.example/{case}"})
        events.append(ModelCalled(stage="unified_react", provider="bench", model="m", request_sha256=request_sha,
                                  reasoning="look", tool_calls=[call]))
        events.append(ToolCalled(call_id=call.id, tool="visit", arguments=call.arguments, arguments_sha256=f"{case}-{t % 5}"))
        if t == 0:
            events.append(GateDecided(gate="source_access_policy", subject="https://factcheck.example/x", passed=False,
                                      reasons=["blocked_domain"]))
        events.append(ToolReturned(call_id=call.id, tool="visit", status="ok", observation="page text " * 20,
                                   sources=[SourceSeen(evidence_id=f"ev-{t % 3 + 1}", url=f"https://site{t % 3}.example/{case}",
                                                       content_sha256=f"{case:060d}{t % 3:04d}",
                                                       source_family=f"content:{case:060d}{t % 3:04d}")],
                                   data={"url": f"https://site{t % 3}.example/{case}"}))
    events.append(ModelCalled(stage="unified_judgment", provider="bench", model="m", request_sha256=request_sha, content="{}"))
    events.append(GateDecided(gate="judgment_schema", subject=episode_id, passed=True))
    events.append(JudgmentMade(verdict=LABELS[(case + rollout) % 4], confidence=0.5 + (e % 5) / 10,
                               verdict_basis=[{"evidence_id": "ev-1", "finding": "origin"}]))
    events.append(EpisodeFinished(termination="completed", time_taken=1.5, total_tool_calls=TOOLS_PER_EPISODE, llm_api_calls=9))
    return [EventDraft(p, episode_id=episode_id, attempt=1, step=i) for i, p in enumerate(events)]


async def _request_blob(writer) -> str:
    return await writer.put_blob(json.dumps({"messages": [{"role": "system", "content": "x"}], "tools": []}).encode(), "application/json")


async def _emit_episodes(writer, request_sha: str, episodes: range) -> None:
    for e in episodes:
        case, rollout = e // 4, e % 4
        await writer.emit(EventDraft(EpisodeScheduled(
            case_id=f"case-{case:06d}", prompt_group_id=f"pg-{case:024d}", rollout_index=rollout, group_size=4,
            sampling_seed=e, image_sha256="0" * 64, image_path="runtime_input/images/x.jpg"),
            episode_id=f"case-{case:06d}--r{rollout:03d}"))
        for draft in _episode(e, case, rollout, request_sha):
            await writer.emit(draft)


async def _generate(log: EventLog, episodes: int, left_to_write: int | None = None) -> None:
    """A sealed run of `episodes`; given `left_to_write`, a live one (no run.finished, not
    sealed) whose last `left_to_write` episodes are not written yet (`_append` writes them)."""
    cases = episodes // 4
    async with log.writer(RUN_ID) as writer:
        request_sha = await _request_blob(writer)
        await writer.emit(EventDraft(RunStarted(
            started_at="2026-11-30T00:00:00+00:00", git_commit="bench",
            benchmark={"release_id": "bench", "release_stage": "frozen_eval", "path": "/bench/runtime_input/cases.jsonl",
                       "training_prohibited": False, "runtime_contract_version": "v"},
            agent={"max_tool_actions": 24, "provider": "bench", "model": "m"},
            source_access_policy={"active": False}, config={"label_set": LABELS, "release_schema_version": "ifv-runtime-release-v0.3"})))
        gold = _gold(cases)
        gold_sha = await writer.put_blob(gold, "application/jsonl")
        await writer.emit(EventDraft(ArtifactImported(kind="evaluation_gold", path="/bench/gold.jsonl", sha256=gold_sha,
                                                      blob_sha256=gold_sha, rows=cases)))
        await _emit_episodes(writer, request_sha, range(episodes - (left_to_write or 0)))
        if left_to_write is not None:
            return
        await writer.emit(EventDraft(RunFinished(status="completed", completed_at="2026-11-30T01:00:00+00:00",
                                                 num_episodes=episodes, num_errors=0)))
    log.seal()


async def _append(log: EventLog, episodes: range) -> None:
    """Write `episodes` to the live run `_generate` left."""
    async with log.writer(RUN_ID) as writer:
        await _emit_episodes(writer, await _request_blob(writer), episodes)


def _python_pass(log: EventLog) -> float:
    """Baseline: one plain pass over every event, tallying each episode's outcome."""
    started = time.perf_counter()
    con = log.connect(views=False)
    outcomes: dict[str, tuple] = {}
    tools: dict[str, int] = {}
    for batch in con.sql("SELECT episode_id, type, payload::VARCHAR AS payload FROM events ORDER BY run_id, seq").to_arrow_reader(50_000):
        columns = batch.to_pydict()
        for episode_id, kind, payload in zip(columns["episode_id"], columns["type"], columns["payload"]):
            if kind == "tool.called":
                tools[episode_id] = tools.get(episode_id, 0) + 1
            elif kind == "judgment.made":
                body = json.loads(payload)
                outcomes[episode_id] = (body["verdict"], body["confidence"])
    con.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--generate-into", type=Path, help="Only write a synthetic log of --episodes there.")
    parser.add_argument("--log", type=Path, help="Time against this log (made by --generate-into) instead of generating one.")
    parser.add_argument("--run-dir", type=Path, help="With --log: materialize into this new folder and leave it (see the docstring: "
                                                     "deleting 100k trace files slows the next run's file creation for minutes).")
    parser.add_argument("--live", type=int, metavar="N", help="With --generate-into: leave the run live, its last N episodes unwritten.")
    parser.add_argument("--append", type=int, nargs=2, metavar=("FIRST", "STOP"),
                        help="With --generate-into: write episodes FIRST..STOP-1 to the live run there.")
    args = parser.parse_args()
    if args.generate_into and args.append:
        anyio.run(_append, EventLog(args.generate_into), range(*args.append))
        return
    if args.generate_into:
        anyio.run(_generate, EventLog(args.generate_into), args.episodes[0], args.live)
        return
    print(f"{'episodes':>9} {'events':>10} {'generate s':>10} {'views s':>8} {'materialize s':>13} {'cpu s':>6} {'python pass s':>13} {'ratio':>6} {'peak MiB':>9} {'load':>5}")
    for episodes in [0] if args.log else args.episodes:
        workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-mat-"))
        try:
            log = EventLog(args.log or workdir / "bench.duckdb")
            started = time.perf_counter()
            if args.log:
                episodes = log.sql("SELECT count(*) AS n FROM events WHERE type = 'episode.scheduled'").to_pylist()[0]["n"]
            else:  # generated by a child process, so peak memory below is the views' and materialize's
                subprocess.run([sys.executable, __file__, "--episodes", str(episodes), "--generate-into", str(log.path)], check=True)
            generate = time.perf_counter() - started
            events = log.sql("SELECT count(*) AS n FROM events").to_pylist()[0]["n"]
            baseline = _python_pass(log)
            started = time.perf_counter()
            con = log.connect(materialize=True)  # every view, computed once
            for definition in view_definitions():
                con.sql(f"SELECT count(*) FROM {definition.name}").fetchall()
            con.close()
            views = time.perf_counter() - started
            started, cpu_started = time.perf_counter(), time.process_time()
            materialize_run(log, RUN_ID, args.run_dir or workdir / "run")
            materialize, materialize_cpu = time.perf_counter() - started, time.process_time() - cpu_started
            print(f"{episodes:>9} {events:>10} {generate:>10.1f} {views:>8.1f} {materialize:>13.1f} {materialize_cpu:>6.1f} {baseline:>13.1f} "
                  f"{materialize / baseline:>6.2f} {_peak_rss_mib():>9.0f} {os.getloadavg()[0]:>5.1f}")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
