"""The ablation families of the embedded tools, as in the seed runner's `--disable-*` flags:
one definition that the tools, the run options (`--disable-<family>`) and the run manifest's
`agent.tool_families` block all read."""

from __future__ import annotations

TOOL_FAMILIES: dict[str, tuple[str, ...]] = {
    "web_search": ("text_search",),
    "image_retrieval": ("text_image_search", "reverse_image_search"),
    "evidence_inspection": ("visit", "compare_with_reference"),
}
