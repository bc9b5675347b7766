"""A model that reuses one tool-call id within an episode (some providers number every
turn's calls from call_0): `tool_calls` pairs each call with every result carrying its id,
and numbers and marks duplicates over those pairs, whichever way the view computes them."""

from __future__ import annotations

import anyio

from eviscene.events import (
    EpisodeFinished,
    EpisodeScheduled,
    EpisodeStarted,
    ModelCalled,
    ToolCalled,
    ToolCallRequest,
    ToolReturned,
)
from eviscene.log import EventLog
from eviscene.store import EventDraft

RUN = "reused-ids"
EPISODE = "case-R"


async def _write(log: EventLog) -> None:
    """Steps: 0 started, 1 model, 2 call c1 (args x), 3 result c1, 4 model, 5 call c1 (args y), 6 result c1, 7 finished."""
    async with log.writer(RUN) as writer:
        request = await writer.put_blob(b'{"messages": [], "tools": []}', "application/json")
        await writer.emit(EventDraft(EpisodeScheduled(
            case_id="case-R", prompt_group_id="pg-R", rollout_index=0, group_size=1, sampling_seed=1,
            image_sha256="0" * 64, image_path="runtime_input/images/r.jpg"), episode_id=EPISODE))
        events: list = [EpisodeStarted(attempt=1, started_at="2026-01-01T00:00:00+00:00")]
        for url, digest in (("https://x.example/", "sha-x"), ("https://y.example/", "sha-y")):
            call = ToolCallRequest(id="c1", name="visit", arguments={"url": url})
            events += [
                ModelCalled(stage="unified_react", provider="p", model="m", request_sha256=request, reasoning="look", tool_calls=[call]),
                ToolCalled(call_id="c1", tool="visit", arguments=call.arguments, arguments_sha256=digest),
                ToolReturned(call_id="c1", tool="visit", status="ok", observation=url),
            ]
        events.append(EpisodeFinished(termination="completed", time_taken=1.0, total_tool_calls=2, llm_api_calls=2))
        for step, payload in enumerate(events):
            await writer.emit(EventDraft(payload, episode_id=EPISODE, attempt=1, step=step))


def test_views_tool_calls_pair_each_call_with_every_result_of_its_id(tmp_path):
    log = EventLog(tmp_path / "reused.duckdb")
    anyio.run(_write, log)
    found = log.sql(
        "SELECT called_step, returned_step, call_index, is_duplicate, observation FROM tool_calls "
        "WHERE run_id = ? AND episode_id = ? ORDER BY called_step, returned_step",
        [RUN, EPISODE],
    ).to_pylist()
    assert [(r["called_step"], r["returned_step"], r["observation"]) for r in found] == [
        (2, 3, "https://x.example/"), (2, 6, "https://y.example/"), (5, 3, "https://x.example/"), (5, 6, "https://y.example/"),
    ]
    # The two pairs of one call share its step: which takes the lower number (and which
    # counts as the repeat of the other, same arguments) is not ordered by anything.
    by_call = {step: [r for r in found if r["called_step"] == step] for step in (2, 5)}
    assert {step: sorted(r["call_index"] for r in pairs) for step, pairs in by_call.items()} == {2: [1, 2], 5: [3, 4]}
    assert {step: sorted(r["is_duplicate"] for r in pairs) for step, pairs in by_call.items()} == {2: [False, True], 5: [False, True]}
