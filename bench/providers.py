"""Wire providers under load: episodes/s through `openai_compatible` (Chat Completions over
real HTTP) against a loopback server that answers every call after a fixed 200 ms, at
concurrency 1, 16, 64 and 256, against the ideal latency-bound rate
N / (ceil(N / c) x calls per episode x 0.2 s), with the log writer's share of wall time, the
process's CPU per episode, each call's time beyond the server's 200 ms (p50 / p90: waiting
for the event loop, the in-flight limiter, a pooled connection; encoding and decoding) and
each episode's time outside model calls, all from the run's own events, and the load average.
Beside each level, the same episodes' HTTP alone: the run's client (`JsonClient`: aiohttp, the
in-flight limiter, retries) sending one real episode's recorded requests (the case image in
each, ~400 kB an episode) at the same concurrency in the same process, its ratio to the same
ideal and CPU per episode, and the run's ratio to it (`/ alone`: what the agent, tools and log
cost on top of the transport).

The server is asyncio in 4 processes on one port (SO_REUSEPORT), none competing with the run
for the GIL; before the levels it is measured alone (a raw-socket client in as many processes,
at twice the largest level) as a fraction of its own latency bound. It replays a short
investigation: one text_search of the caption, a stop, a judgment. Episodes take the real
path: HTTP client, retries layer, in-flight limiter, tools, log. Perception is warmed first
so OCR does not count.

    python bench/providers.py [--levels 1 16 64 256] [--cases 16] [--episodes 64]

Where the time went (cProfile, the events, CPU clocks; 2 shared cores at load 13-27,
December 2026): the run's event loop is CPU-bound. The episode phase cost ~9 ms of CPU an
episode (3 calls, 1 tool, ~13 events); at c=64 that is 0.58 s for a 0.6 s wave, at c=256
2.3 s, so even a free core bounds the ratio near 0.7-1 at c=64 and ~0.26 at c=256. In the
profile httpx was about half of the loop's busy time (1.27 of 2.25 s for 192 calls),
json.dumps of request bodies 0.17 s (now orjson, as are the answers; the request blob is
serialized once), the writer's batches ~0.1 s. A text_search in a worker thread took p50
92-143 ms of wall for ~1 ms of CPU (the thread waits for the GIL behind the busy loop; run
inline it took 1 ms, but whole-run ratios moved within the noise, 0.26-0.32 vs 0.28-0.34).
Limits checked, none capping: max_inflight = concurrency; the HTTP connections (then httpx
pools of 8, now one aiohttp connector of max_inflight); anyio's shared pool of 40 threads
caps concurrent tool calls at 40 and was also where the log writer waited for its commits
(it now has its own thread). Measured here at load 20-22: ratio 0.12-0.34 at c=64 (calls
+218-620 ms p50), 0.07 at c=256 (+1,347 ms p50); the server alone 0.81 of its bound at 64
connections and 0.51 at 512, the same with 1 or 4 server processes: the machine, not the
server, was the limit.

The HTTP client is now aiohttp (a C parser) instead of httpx. JsonClient alone, against
this kind of server (2 processes, 200 ms answers, load 3.7-4.5), cost the client 1.1-1.9
ms of CPU a call through httpx and 0.16-0.23 ms through aiohttp at 64 and 256 connections
(no growth with connections: httpx's per-pool workaround is gone; anyio.fail_after around
each call was another 0.03-0.07 ms, aiohttp's own total timeout replaces it). Here,
httpx's code against aiohttp's run one after the other (A, B, A, B; load 1.9-4.5 from
another bench on the same 2 cores), 8 pairs at c=64 and c=256, aiohttp ahead in each:

    CPU ms / episode   c=64  6.9-11.1 -> 3.9-5.7      c=256  6.4-10.3 -> 3.7-5.7
    ratio              c=64  0.42-0.62 -> 0.58-0.72   c=256  0.18-0.31 -> 0.29-0.44
    call +ms p50       c=64  68-169 -> 25-49          c=256  231-531 -> 60-204

(the default levels once each, load 2.1-2.3: c=1 0.96 -> 0.98, c=16 0.86 -> 0.92, c=64 0.43
-> 0.71, c=256 0.18 -> 0.36). HTTP is now 0.5-0.7 ms of the ~4 ms an episode: the rest is
the agent, its events and the log around the calls (and sending each body, its image as
base64, ~0.35 ms on loopback). At ~4 ms an episode c=256 needs 1 s of CPU for a 0.6 s
wave, so one free core bounds its ratio near 0.6; beyond that, episodes spread over
processes.

Where the rest goes (py-spy on the runner at c=256, 15 rounds, the episode phase only; load
5-6 from other work on the 2 cores): asyncio's loop ~23% of the busy samples, aiohttp ~14%
(a new connection per episode: each run opens its own session), the store ~12% (numbering,
hashing and writing the events; opening the run's writer), pydantic ~9%, the providers'
own code (building and encoding requests) ~8%, the agent ~5%, the text_search tool ~5%, thread hand-offs (tool calls
in anyio's worker threads) ~5-10%. No single per-episode piece left is 5% of the CPU. Two
costs are per run, inside the measured phase, and weigh on c=64's 64 episodes: opening the
run's writer reads the run's state through a fresh DuckDB connection (~24 ms of CPU, DuckDB
building its catalog; 25-42 ms measured) and the aiohttp session loaded certifi's CA bundle
into a TLS context (23-38 ms) even for a plain-HTTP server. The session now builds that
context only when the endpoint or its proxy is https: measured inside the run, 23-38 ms ->
0.4 ms a session (load 5.8-6.1), i.e. ~0.5 ms an episode at c=64 (~9%), ~0.13 at c=256
(~2%). Main's code against this one (A, B, A, B; 7 pairs; load 3.6-6.2 from another
engineer's compile and bench on the same cores, which also inflates CPU per episode ~1.5x
against the figures above at load 2-4), each pair's figure and the median:

    CPU ms / episode  c=64  5.9 6.2 7.4 7.4 6.5 5.5 5.4 (6.2) -> 4.9 6.3 7.2 5.6 4.8 6.8 5.0 (5.6)
                      c=256 6.1 5.9 5.8 5.4 6.4 5.2 5.7 (5.8) -> 6.0 5.7 6.1 5.6 5.7 6.2 3.4 (5.7)
    ratio             c=64  .50 .56 .33 .37 .34 .63 .59 (.50) -> .60 .49 .33 .63 .66 .53 .49 (.53)
                      c=256 .18 .22 .22 .25 .16 .30 .29 (.22) -> .20 .24 .20 .26 .25 .21 .40 (.24)

(at c=256 the change is inside the noise). Tried, not kept: text_search run inline instead
of in a worker thread, CPU median 5.58 -> 5.05 ms an episode at c=256 (12 alternating
rounds, load 5.7) with the ratio unchanged (0.26 -> 0.27), but a search then blocks every
episode's I/O for its length, which grows with the corpus; the request blob serialized from
a dict instead of `model_dump(mode="json")` saves 60 us an episode (~1.5%), under the bar
for a change that must keep every logged byte.

At low load (December 3rd; 2.0-2.5, the server's four processes included), levels 64 and 256,
four runs of this code: c=64 0.70, 0.70, 0.71, 0.76, c=256 0.43, 0.45, 0.45, 0.46, 3.3-4.7 ms of
CPU an episode; each episode spent 67-103 ms outside its model calls at c=64 (the tool in its
worker thread, events, waiting for the loop) and each call p50 22-33 ms beyond the server's
200 ms. Tried, not kept, alternating with those runs: uvloop as anyio's event loop (0.70 and
0.73 at c=64, 0.42 and 0.46 at c=256: no change) and a 0.5 ms GIL switch interval, so the tool
thread waits less behind the loop (0.70 and 0.70, 0.39 and 0.43: slightly worse).

The c=64 wave, event by event (one wave of 64 episodes, ms from the phase's start, load ~1):
perception ends 4-40 ms (cached, serial on the loop), call 1 ends 250-285 (+50-75 ms beyond
its 200), the tool 250-360, call 2 455-575, call 3 660-790; so the loop's serial CPU at each
burst is the whole overhead. Three things stood out: the run's writer read the run's state
(a fresh DuckDB connection, ~20 ms; 24-35 ms measured) before the first episode started; a
full garbage collection (1 run in 2 or 3) paused the loop 72-96 ms, walking the corpus
indexes, OCR models and release loaded before the episodes; and a text_search cost 0.74 ms
of CPU, 70% of it the snippet (a tuple and three method calls per token of the page). Now the
writer reads its state while the first events queue (nothing is numbered before it), the
episode phase runs with the heap it started with frozen out of collections
(`rules/settled_heap.py`, as the import's write), the snippet tokenizes with one `findall`
and counts windows with set intersections (0.30 ms a search; the same snippets on 8,160
page/query pairs), and `redact` of an empty error text (every model call's) no longer scans
the environment. Main then this code, four pairs (load 1.5-2.1):

    ratio c=64   0.69 0.71 0.70 0.73 -> 0.76 0.76 0.73 0.75
    ratio c=256  0.38 0.39 0.42 0.39 -> 0.45 0.45 0.39 0.48
    CPU ms/ep    c=64 4.0-5.0 -> 4.1-4.9; c=256 4.6-4.9 -> 3.8-5.2

Then py-spy on the loop thread at c=256 (12 waves): building each call's `data:` URL, a ~130 kB
string made again for every call of every episode, was 5% of its busy samples; the provider
now keeps the whole URL per image. Four more pairs, main then this code (load 0.7-2.1):

    ratio c=64   0.71 0.69 0.73 0.71 -> 0.75 0.76 0.77 0.77
    ratio c=256  0.42 0.42 0.42 0.42 -> 0.44 0.44 0.54 0.57
    CPU ms/ep    c=64 4.2-4.9 -> 3.7-4.3; c=256 4.5-4.7 -> 2.7-4.8

Left: ~4 ms of CPU an episode on one event loop, no piece of it over ~8% of the loop's
samples: asyncio and aiohttp about a third (the socket writes of 130 kB bodies 7.5%, a TCP
connect per episode 5.7%), the request's record (its model_dump 5.6%, sha256 3.4%), orjson of
the wire body with its image 5%, the store's numbering and hashing, pydantic, the tool calls'
thread hand-offs; paid in bursts because a wave's episodes move in step. c=256 needs under
~3 ms an episode for 0.7. Ray workers (`--executor ray --workers 2`) on these 2 cores were
slower: c=64 0.65, c=256 0.14 (one run each).

December 3rd, second round. The c=64 wave, event by event at load ~1: a tool call took up to
~110 ms (tool.called 281-322 ms, tool.returned 296-438) for a text_search of ~0.3 ms of CPU:
64 calls handed to worker threads, each waiting for the GIL behind the busy loop, and ~1 ms of
CPU an episode in the hand-offs (CPU per episode 4.8 -> 3.8 ms with the call made inline). A
worker thread gives Python-bound work no parallelism, so the toolbox now runs its text tools
(text_search, text_image_search, visit: BM25 and page lookups over the in-memory corpus) on the
event loop; the image tools, whose OpenCV and NumPy work releases the GIL, stay in worker
threads. Then cProfile of the episode phase alone (six c=256 runs): a text_search was still
~20% of the loop, its snippets re-tokenizing each page hit (findall, casefold and finditer
over the whole text) and BM25 computing each posting's weight per query. Now BM25's postings
carry their weights, computed when the index is built (the same floats: the expression and the
order of the sums are unchanged), and the index keeps the tokens of the last 1,024 pages it
showed, so a snippet is a window scan (0.62-0.73 -> 0.11-0.14 ms of CPU a text_search on the
bundled corpus, distinct queries, the worker-thread hand-off included; the same hits, scores
and snippets on 8,560 query/page pairs). The source policy normalized each URL twice a check
(`url_host`, then the prefix key): now once, and `normalize_url` keeps its last 8,192 answers
(the tools check the same corpus URLs call after call). `redact_data` read the whole
environment once a string (~200 strings in a run's manifest, ~23 ms a run start): now once a
call. Main then this code, four pairs at load 0.5-2.2:

    ratio c=64   0.76 0.76 0.75 0.79 -> 0.82 0.84 0.80 0.84
    ratio c=256  0.57 0.51 0.49 0.49 -> 0.68 0.62 0.60 0.62
    CPU ms/ep    c=64 3.4-4.3 -> 2.7-3.4; c=256 2.7-3.7 -> 2.2-2.9
    off-call ms  c=64 64-77 -> 17-20; c=256 152-251 -> 67-95

and the default levels once each (load 1.0 / 0.7): c=1 0.98 -> 0.99, c=16 0.95 -> 0.96, c=64
0.74 -> 0.81, c=256 0.47 -> 0.64. Six later runs of this code (load 0.9-2.0, alternating with a
trial of a larger gen-0 garbage-collection threshold in the episode phase, which gave 0.78-0.80
and 0.59-0.60, no gain, and was dropped) gave c=64 0.75-0.81 and c=256 0.54-0.67. The offline agent's run of the bundled release gives the same
events (every payload but clocks and latencies), and the exports of one log are byte-identical.
Left: ~2.5 ms of CPU an episode, about half of it aiohttp and asyncio (a request's timers,
headers, the socket writes of its ~130 kB body), the rest spread thin (events built and
serialized, the request's record, 20-60 us items). The bench server (json.loads of each body)
cost ~1.4 ms of CPU an episode on the other core; reading with orjson instead (two runs), the ratio
did not move, so it is not what holds c=64 back.

December 3rd, third round. py-spy on the event loop at c=256 (12 waves): the text_search was
still ~13% of the loop's samples (BM25's ranking 5%, the snippets 4.4%, a page's tokens 1.5%)
and the request's record ~7% (`model_dump(mode="json")` copying every message 5.3%, then its
canonical serialization). Now the search index keeps each query's ranking (256 queries an
index) with its best 32 hits and their snippets, so the rollouts of a case, which ask the same
queries, rank and cut snippets once (a caller that reads past 32, its policy having blocked
most of them, ranks again; tests pin the order and snippets past the kept hits); and
`ModelRequest.record()` serializes the request's fields as they are with orjson, taking the
dump only for what orjson would write differently (sets, bytes, datetimes, models, subclasses:
a test pins the same bytes for each). Main then this code, each process 8 waves a level
(median ratio), four pairs at load 1.0-1.8:

    ratio c=64   0.749 0.761 0.794 0.796 -> 0.811 0.788 0.784 0.783
    ratio c=256  0.607 0.545 0.593 0.574 -> 0.665 0.627 0.633 0.619
    CPU ms/ep    c=256 2.8-3.2 -> 2.4-2.8

and three more pairs at c=64 alone, 14 waves each (0.781 0.798 0.783 -> 0.792 0.795 0.822): c=256
gains ~0.04-0.06, c=64 stays within its noise. The offline agent's 56 episodes on the bundled
release give the same events as main's code (every payload but clocks and latencies).
Why c=64 does not move, and where the goals stand: the new `client alone` baseline (three runs,
load 0.5-2: c=64 0.85-0.89 at 1.3-1.8 ms CPU an episode, c=256 0.65-0.69 at 1.3-1.5 ms; the
run 0.87-0.94 of it; the default levels at load 0.5: c=1 0.99, c=16 0.95, c=64 0.82, c=256 0.60). Raw aiohttp, without JsonClient, in a fresh process: c=64 0.87-0.91,
c=256 0.66-0.77. So on these 2 cores, with the server's 4 processes on them, the HTTP transport
alone stands at ~0.7 at c=256, the goal; and c=64's 0.85 would leave the agent, its tools and
the log ~0.3-0.4 ms of the loop's CPU an episode, where they take ~1.1-1.6 (its events, its
records, a tool call, three requests built: no piece over ~5% of the loop). Would episodes
spread over processes reach them? Measured as an upper bound, with no events crossing between
processes: two processes started together, each running half the level into its own log
against the same server (6 waves each, the wave from the first start to the last end): c=256
0.51-0.65 against one process's 0.60-0.65, c=64 0.80-0.87 against 0.79-0.85. On these 2 cores,
which the server's processes share, a second event loop buys nothing at c=256 and little at
c=64, before any cost of sending its events to the run's writer; the goals need more cores
than the run and its server have here. In the bench process the client alone first ran without the
settled heap: 0.78 and 0.56 at 2.8 and 2.1 ms CPU, the collector walking the release, indexes
and log this process holds (the run's episode phase settles its heap, so now does this
baseline). Tried, not kept: one judgment schema per label set shared by every request instead
of a deep copy per episode (~20-40 us; a test pins each request's schema as its own copy), and
the collector off for the whole phase (c=256 0.62 and 0.64 -> 0.66 and 0.68, two runs each:
within the noise, and an unbounded heap).

With `--llama`, the same through a REAL server instead: llama-cpp-python's server running
SmolLM2-135M-Instruct (`EVISCENE_LLAMA_PYTHON`, `EVISCENE_LLAMA_GGUF`, as the tests and
`.ci/run` set them), at concurrency 1, 4 and 8, each rate as a ratio of concurrency 1's (the
agent reads the perception report, in a 2048-token window, as in the tests):

    python bench/providers.py --llama [--llama-levels 1 4 8] [--llama-episodes 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import shutil
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
import urllib.request
from pathlib import Path

import anyio

from eviscene.eval.options import EvalOptions
from eviscene.eval.run import start_run
from eviscene.log import EventLog
from eviscene.providers.http import Endpoint, JsonClient
from eviscene.rules.settled_heap import settled_heap

RELEASE = Path(__file__).resolve().parents[1] / "examples" / "eviscene-demo-v1" / "runtime_input" / "cases.jsonl"
LATENCY = 0.2
JUDGMENT = json.dumps({"verdict": "authentic", "confidence": 0.6, "verdict_basis": [], "rationale": "bench"})


def _completion(content: str | None, tool_calls: list | None = None) -> bytes:
    message: dict = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return json.dumps(
        {
            "id": "bench",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050},
        }
    ).encode()


def _answer(body: dict) -> bytes:
    if "response_format" in body:
        return _completion(JUDGMENT)
    if any(m["role"] == "tool" for m in body["messages"]):
        return _completion("Enough.")
    report = body["messages"][1]["content"][0]["text"]
    words = " ".join(report.split("Text printed in the image:", 1)[-1].split()[:8]) or "news photo"
    call = {"id": "call_1", "type": "function", "function": {"name": "text_search", "arguments": json.dumps({"query": words})}}
    return _completion(None, [call])


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One keep-alive connection: read a request, answer it 200 ms later, wait for the next.
    Headers and body go out in one write (asyncio sets TCP_NODELAY: no delayed-ACK stall)."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
            )
            body = json.loads(await reader.readexactly(length))
            await asyncio.sleep(LATENCY)
            data = _answer(body)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the client closed the connection
    finally:
        writer.close()


async def _listen(port: int) -> None:
    # A backlog of 1024: the default drops SYNs when hundreds of episodes connect at once.
    server = await asyncio.start_server(_handle, "127.0.0.1", port, backlog=1024, reuse_port=True)
    await server.serve_forever()


def _serve(port: int) -> None:
    asyncio.run(_listen(port))


def _start_servers(processes: int) -> tuple[str, list[multiprocessing.Process]]:
    """The loopback server: `processes` asyncio loops on one port (SO_REUSEPORT: the kernel
    spreads the connections), each its own process so none competes with the run for the GIL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    servers = [multiprocessing.Process(target=_serve, args=(port,), daemon=True) for _ in range(processes)]
    for server in servers:
        server.start()
    base_url = f"http://127.0.0.1:{port}/v1"
    for _ in range(300):  # until one of them listens
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return base_url, servers
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the bench server did not start on port {port}")


async def _clients(base_url: str, body: bytes, connections: int, calls_each: int) -> float:
    """Seconds for `connections` keep-alive connections of a minimal raw-socket client to
    POST `calls_each` requests each, one after another."""
    host, port = base_url.split("//", 1)[1].split("/", 1)[0].split(":")
    request = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)

    async def client() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        for _ in range(calls_each):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(connections)))
    return time.perf_counter() - started


def _client_process(base_url: str, body: bytes, connections: int, calls_each: int) -> float:
    return asyncio.run(_clients(base_url, body, connections, calls_each))


async def _recorded_requests(log: EventLog, benchmark: str, base_url: str) -> list[tuple[str, dict]]:
    """The wire requests (path, JSON body) of one real episode, in order, as the run sent them."""
    sent: list[tuple[str, dict]] = []
    post = JsonClient.post

    async def recording(client: JsonClient, path: str, body: dict) -> tuple[dict, list]:
        sent.append((path, body))
        return await post(client, path, body)

    JsonClient.post = recording  # type: ignore[method-assign]
    try:
        await start_run(log, EvalOptions(benchmark=benchmark, limit=1, provider="openai_compatible", model="bench", base_url=base_url))
    finally:
        JsonClient.post = post  # type: ignore[method-assign]
    return sent


async def _client_alone(base_url: str, requests: list[tuple[str, dict]], level: int, episodes: int) -> tuple[float, float]:
    """The HTTP client alone (the run's JsonClient: aiohttp, in-flight limiter, retries) sending
    one episode's recorded requests, one after another, for `episodes` episodes `level` at a
    time in this process: its rate as a fraction of the latency bound, and its CPU ms an
    episode. No agent, tools or log: what the transport leaves for them on this machine. The
    heap is settled as in the run's episode phase (this process holds the run's release,
    indexes and log too)."""
    client = JsonClient(Endpoint(base_url=base_url, max_inflight=level), label="bench")
    limiter = anyio.CapacityLimiter(level)

    async def episode() -> None:
        async with limiter:
            for path, body in requests:
                await client.post(path, body)

    started, cpu = time.perf_counter(), time.process_time()
    try:
        with settled_heap():
            async with anyio.create_task_group() as group:
                for _ in range(episodes):
                    group.start_soon(episode)
    finally:
        await client.aclose()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    ideal = episodes / (math.ceil(episodes / level) * len(requests) * LATENCY)
    return episodes / wall / ideal, cpu / episodes * 1000


def _server_alone(base_url: str, body: bytes, connections: int, calls_each: int, processes: int) -> float:
    """The server's rate alone, as a fraction of its latency bound: the clients spread over
    `processes` processes so that they, not the server, are never the limit."""
    share = math.ceil(connections / processes)
    with ProcessPoolExecutor(processes) as pool:
        seconds = list(pool.map(_client_process, *zip(*[(base_url, body, share, calls_each)] * processes)))
    return share * processes * calls_each / max(seconds) * LATENCY / (share * processes)


class Clock:
    """Times the episode phase only (planning builds the corpus indexes first)."""

    def planned(self, run_id: str, episodes: int) -> None:
        self.start, self.start_cpu = time.perf_counter(), time.process_time()

    def finished(self, spec, finished) -> None:
        self.end, self.end_cpu = time.perf_counter(), time.process_time()


LLAMA_PROFILE = """
[profiles.smollm2]
provider = "openai_compatible"
model = "smollm2"
timeout = 600

[profiles.smollm2.max_tokens]
unified_react = 48
unified_judgment = 160
"""


def _llama(args: argparse.Namespace) -> None:
    """Episodes/s through llama.cpp's server at each concurrency, against concurrency 1."""
    python, gguf = os.environ.get("EVISCENE_LLAMA_PYTHON"), os.environ.get("EVISCENE_LLAMA_GGUF")
    if not python or not gguf:
        raise SystemExit("--llama needs EVISCENE_LLAMA_PYTHON and EVISCENE_LLAMA_GGUF (see README: a local llama.cpp server)")
    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-llama-"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [python, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
         "--chat_format", "chatml-function-calling", "--n_ctx", "8192"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},  # as the tests: spinning threads starve each other on two cores
    )
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        for _ in range(600):
            try:
                urllib.request.urlopen(base_url + "/models", timeout=2).close()
                break
            except OSError:
                time.sleep(0.3)
        (workdir / "profiles.toml").write_text(LLAMA_PROFILE, encoding="utf-8")
        os.environ["EVISCENE_PROFILES"] = str(workdir / "profiles.toml")
        log = EventLog(workdir / "bench.duckdb")
        anyio.run(start_run, log, EvalOptions(benchmark=args.benchmark, limit=1))  # warm perception
        print(f"{'concurrency':>11} {'episodes':>8} {'calls/ep':>8} {'seconds':>8} {'eps/s':>8} {'vs c=1':>7}")
        baseline = None
        for level in args.llama_levels:
            options = EvalOptions(
                benchmark=args.benchmark, limit=1, rollouts_per_case=args.llama_episodes, concurrency=level, profile="smollm2",
                base_url=base_url, image_access_mode="separate_vlm", vlm_provider="offline", context_window=2048,
            )
            clock = Clock()
            summary = anyio.run(lambda: start_run(log, options, observer=clock))
            wall = clock.end - clock.start
            calls = log.sql("SELECT avg(llm_api_calls) AS c FROM episodes WHERE run_id = ?", [summary.run_id]).to_pylist()[0]["c"]
            rate = summary.ran / wall
            baseline = baseline or rate
            print(f"{level:>11} {summary.ran:>8} {calls:>8.1f} {wall:>8.1f} {rate:>8.3f} {rate / baseline:>7.2f}   {dict(summary.terminations)}")
    finally:
        server.kill()
        shutil.rmtree(workdir, ignore_errors=True)


# Per call: the time beyond the server's 200 ms (waiting for the loop, the limiter, a pooled
# connection; encoding and decoding). Per episode: the time spent outside model calls.
CALL_STATS = """
WITH calls AS (
    SELECT episode_id, (payload->>'latency_ms')::DOUBLE - $latency_ms AS beyond
    FROM events WHERE run_id = $run AND type = 'model.called'
), spans AS (
    SELECT episode_id, epoch_ms(max(ts)) - epoch_ms(min(ts)) AS span_ms FROM events
    WHERE run_id = $run AND episode_id IS NOT NULL AND type <> 'episode.scheduled' GROUP BY episode_id
), outside AS (
    SELECT s.span_ms - sum(c.beyond + $latency_ms) AS outside_ms FROM spans s JOIN calls c USING (episode_id)
    GROUP BY s.episode_id, s.span_ms
)
SELECT (SELECT quantile_cont(beyond, 0.5) FROM calls) AS beyond_p50,
       (SELECT quantile_cont(beyond, 0.9) FROM calls) AS beyond_p90,
       (SELECT quantile_cont(outside_ms, 0.5) FROM outside) AS outside_p50
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", default=str(RELEASE))
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--cases", type=int, default=16)
    parser.add_argument("--episodes", type=int, default=64, help="Episodes per level (at least the level itself).")
    parser.add_argument("--server-processes", type=int, default=4)
    parser.add_argument("--llama", action="store_true", help="Measure against a real llama.cpp server instead.")
    parser.add_argument("--llama-levels", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--llama-episodes", type=int, default=4)
    args = parser.parse_args()
    if args.llama:
        _llama(args)
        return
    base_url, servers = _start_servers(args.server_processes)
    workdir = Path(tempfile.mkdtemp(prefix="eviscene-bench-providers-"))
    try:
        # The server must not be what is measured: alone, at twice the largest level, it keeps
        # close to the latency-bound rate with a request body the size of a real one (~6 kB).
        probe = json.dumps({"model": "bench", "messages": [
            {"role": "system", "content": "x" * 3000}, {"role": "user", "content": [{"type": "text", "text": "y" * 3000}]}
        ]}).encode()
        connections = 2 * max(args.levels)
        served = _server_alone(base_url, probe, connections, 3, args.server_processes)
        print(f"server alone at {connections} connections: {served:.2f} of its latency-bound rate (load {os.getloadavg()[0]:.1f})")
        log = EventLog(workdir / "bench.duckdb")
        anyio.run(start_run, log, EvalOptions(benchmark=args.benchmark, limit=args.cases, concurrency=4))  # warm perception
        requests = anyio.run(_recorded_requests, log, args.benchmark, base_url)
        print(f"client alone: one episode's {len(requests)} requests ({sum(len(json.dumps(b)) for _, b in requests) // 1024} kB) per episode")
        print(
            f"{'concurrency':>11} {'episodes':>8} {'calls/ep':>8} {'seconds':>8} {'eps/s':>8} {'ideal':>8} {'ratio':>6}"
            f" {'log share':>9} {'CPU ms/ep':>9} {'call +ms p50/p90':>16} {'off-call ms/ep':>14}"
            f" {'client alone':>12} {'its CPU':>7} {'/ alone':>7} {'load':>5}"
        )
        for level in args.levels:
            options = EvalOptions(
                benchmark=args.benchmark, limit=args.cases, rollouts_per_case=math.ceil(max(args.episodes, level) / args.cases),
                concurrency=level, provider="openai_compatible", model="bench", base_url=base_url,
            )
            clock = Clock()
            summary = anyio.run(lambda: start_run(log, options, observer=clock))
            cpu = clock.end_cpu - clock.start_cpu  # the episode phase, every thread of the process
            assert summary.terminations == {"completed": summary.ran}, summary.terminations
            wall = clock.end - clock.start
            calls = log.sql("SELECT avg(llm_api_calls) AS c FROM episodes WHERE run_id = ?", [summary.run_id]).to_pylist()[0]["c"]
            stats = log.sql(CALL_STATS, {"run": summary.run_id, "latency_ms": LATENCY * 1000}).to_pylist()[0]
            ideal = summary.ran / (math.ceil(summary.ran / level) * calls * LATENCY)
            rate = summary.ran / wall
            alone, alone_cpu = anyio.run(_client_alone, base_url, requests, level, summary.ran)
            print(
                f"{level:>11} {summary.ran:>8} {calls:>8.1f} {wall:>8.2f} {rate:>8.2f} {ideal:>8.2f} {rate / ideal:>6.2f}"
                f" {summary.log_seconds / wall:>8.1%} {cpu / summary.ran * 1000:>9.1f}"
                f" {stats['beyond_p50']:>7.0f} / {stats['beyond_p90']:>6.0f} {stats['outside_p50']:>14.0f}"
                f" {alone:>12.2f} {alone_cpu:>7.1f} {rate / ideal / alone:>7.2f} {os.getloadavg()[0]:>5.1f}"
            )
    finally:
        for server in servers:
            server.terminate()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
