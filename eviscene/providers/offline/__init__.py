"""The offline provider: a deterministic investigation policy behind the provider interface.

No network, no weights: it reads the perception report and the tool results in the
conversation and decides the next tool calls or the judgment, as a model would. Rollouts of
one case differ through the sampling seed. It never reads gold.
"""

from __future__ import annotations

import json

from eviscene.agent.provider import ModelRequest, ModelResponse
from eviscene.events import ToolCallRequest
from eviscene.providers.offline.investigation import Investigation
from eviscene.providers.profiles import PROVIDER_KINDS

DEFAULT_MODEL = PROVIDER_KINDS["offline"].only_model

_INTENT = {
    "reverse_image_search": "Look for earlier copies of this picture.",
    "visit": "Read {url} to see when, where and by whom the picture was published.",
    "compare_with_reference": "Compare the case image with {reference_image_url} to check it is the same picture and unaltered.",
    "text_search": "Search the web for the claimed event: {query}.",
    "text_image_search": "Search images described like the claim: {query}.",
}


class OfflineProvider:
    name = "offline"

    def __init__(self, model: str | None = None):
        self.model = model or DEFAULT_MODEL
        self._tools: list[dict] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.tools:
            self._tools = request.tools
        investigation = Investigation.from_messages(request.messages, request.tools, request.sampling_seed)
        if request.stage == "unified_judgment":
            judgment = investigation.verdict()
            return ModelResponse(content=json.dumps(judgment, ensure_ascii=False), reasoning=judgment["rationale"])
        actions = investigation.next_actions()
        if not actions:
            return ModelResponse(content="The evidence gathered is enough to judge the claim.", reasoning=_claim_note(investigation))
        first = len(investigation.calls) + 1
        calls = [
            ToolCallRequest(id=f"call-{first + i}", name=name, arguments=arguments)
            for i, (name, arguments) in enumerate(actions)
        ]
        reasoning = " ".join(_INTENT[name].format(**arguments) if arguments else _INTENT[name] for name, arguments in actions)
        return ModelResponse(reasoning=reasoning, tool_calls=calls)


def _claim_note(investigation: Investigation) -> str:
    claim = investigation.claim
    found = len(investigation.copies)
    return f"The claim names {', '.join(claim.names) or 'no place'} on {claim.date or 'no stated date'}; {found} copies of the picture were found."
