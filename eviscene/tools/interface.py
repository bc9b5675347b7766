"""`Toolbox`: what the agent loop calls, whichever tools a run has: the corpus tools
(`CorpusToolbox`), the web tools (`WebToolbox`), or either behind the tool cache
(`CachedToolbox`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from eviscene.release.case_image import CaseImage
from eviscene.rules.source_policy import SourceAccessPolicy
from eviscene.tools.results import ToolOutcome

if TYPE_CHECKING:
    from eviscene.tools.toolbox import EpisodeTools  # loads the image and OCR libraries


class Toolbox(Protocol):
    """One run's tools, shared by all its episodes."""

    policy: SourceAccessPolicy  # the source-access policy every result passed
    enabled_tools: tuple[str, ...]  # the tools this run offers, in `specs()` order

    def specs(self) -> list[dict[str, Any]]:
        """Function specs of the enabled tools, in a fixed order."""
        ...

    def episode(self, case_image: str | Path | CaseImage, *, text_boxes: Sequence[Sequence[Sequence[float]]] = ()) -> EpisodeTools:
        """Fresh per-episode state: the case image and the evidence ids handed out so far."""
        ...

    async def call(self, name: str, arguments: Any, episode: EpisodeTools) -> ToolOutcome:
        """Run one tool call; never raises for a bad call or a failing tool."""
        ...
