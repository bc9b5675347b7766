"""When an episode's answer is correct, defined once for Python and SQL (registered as
`verdict_correct`): the episode completed and its verdict equals the gold label. An episode
that errored, timed out or gave no verdict is not correct, nor is one without gold."""

from __future__ import annotations


def verdict_correct(termination: str | None, verdict: str | None, gold_label: str | None) -> bool:
    return termination == "completed" and verdict is not None and verdict == gold_label
