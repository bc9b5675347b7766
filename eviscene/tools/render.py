"""How tool results read to the model: page lines and comparison summaries."""

from __future__ import annotations

from typing import Any

from eviscene.events import SourceSeen
from eviscene.tools.pages import CorpusImage, Page
from eviscene.tools.image_compare import Comparison


def page_meta(page: Page) -> list[str]:
    meta = [f"{page.site_name} ({page.domain})" if page.site_name else page.domain]
    meta.append(f"published {page.published}" if page.published else "publication date unknown")
    if page.author:
        meta.append(f"by {page.author}")
    return meta


def page_line(page: Page) -> str:
    """`"Title" — Site (domain), published 2021-03-14, by Author`"""
    return f'"{page.title or "(untitled)"}" — ' + ", ".join(page_meta(page))


def page_fields(page: Page, source: SourceSeen) -> dict[str, Any]:
    return {"evidence_id": source.evidence_id, "url": page.url, "title": page.title, "site_name": page.site_name,
            "domain": page.domain, "published": page.published, "content_sha256": page.content_sha256}


def image_fields(entry: CorpusImage, source: SourceSeen) -> dict[str, Any]:
    return {**page_fields(entry.page, source), "image_url": entry.url, "image_sha256": entry.image.sha256,
            "alt": entry.image.alt}


def comparison_summary(comparison: Comparison) -> str:
    """One line for a reverse-search match."""
    text = f"Same picture (similarity {comparison.similarity:.2f})"
    if comparison.mirrored:
        text += ", flipped left to right"
    if comparison.edited:
        text += f", but the case image differs locally: {_differences(comparison)}"
    return text + "."


def comparison_detail(comparison: Comparison) -> str:
    """The full verdict of compare_with_reference, a few lines."""
    if not comparison.match:
        return (f"Not the same picture (similarity {comparison.similarity:.2f}, a match needs {comparison.threshold:.2f}; "
                f"the reference covers {comparison.overlap:.0%} of the case picture).")
    lines = [f"Same picture: yes (similarity {comparison.similarity:.2f}, threshold {comparison.threshold:.2f}; "
             f"the reference covers {comparison.overlap:.0%} of the case picture)."]
    if comparison.mirrored:  # a common re-post change, and one that makes a scene's left its right
        lines.append("Mirrored: the case image is the reference flipped left to right.")
    if comparison.edited:
        lines.append(f"Local differences: {_differences(comparison)}; {comparison.changed_blocks} of "
                     f"{comparison.total_blocks} grid blocks differ. The case image shows a locally altered version of this picture.")
    else:
        lines.append("No local differences beyond resizing, cropping, recompression or brightness.")
    ignored = []
    if any(side in comparison.query_trimmed for side in ("top", "bottom")):
        ignored.append("a caption banner")
    if comparison.masked_fraction >= 0.02:
        ignored.append(f"printed captions or badges over {comparison.masked_fraction:.0%} of the picture")
    if any(region.kind == "caption_rows" for region in comparison.regions):
        ignored.append("differences only within the rows of the printed caption (its band)")
    if any(region.kind == "frame_edge" for region in comparison.regions):
        ignored.append("thin strips along the picture's edge (a frame's residue)")
    if ignored:
        lines.append("Ignored on the case image: " + " and ".join(ignored) + ".")
    return "\n  ".join(lines)


def _differences(comparison: Comparison) -> str:
    parts = []
    for region in comparison.regions[:4]:
        where = f"x {region.x0:.0%}–{region.x1:.0%}, y {region.y0:.0%}–{region.y1:.0%} of the case picture"
        what = {"text": "the printed text differs from the text the reference shows there",
                "caption_rows": "the picture differs only within the rows of the printed caption (its band; not an edit)",
                "frame_edge": "a thin strip along the picture's edge differs (a frame's residue; not an edit)"}.get(region.kind, "the picture differs")
        parts.append(f"{what} at {where}")
    more = len(comparison.regions) - len(parts)
    return "; ".join(parts) + (f"; and {more} more region(s)" if more > 0 else "")
