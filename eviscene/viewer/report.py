"""`eviscene report`: the dashboard, the episode list and every episode page of one run (and
optionally its comparison with another) as ONE self-contained HTML file: styles, scripts,
plot specs and image thumbnails inline, nothing fetched from a network.

Episode pages are rendered here by the same code as the live viewer, gzipped in chunks and
embedded as data; the page inflates a chunk and shows one episode on demand, so a 10k-episode
run is one file of modest size and one DOM tree, not 10k."""

from __future__ import annotations

import base64
import gzip
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from eviscene.exports.serialize import write_text
from eviscene.log import EventLog
from eviscene.rules.canonical import readable_json
from eviscene.store.layout import check_not_the_log
from eviscene.viewer import data, pages
from eviscene.viewer.images import RunImages, page_images
from eviscene.viewer.server import SCRIPTS, static_text

EPISODES_PER_CHUNK = 100


class ReportLinks(pages.Links):
    """Anchors inside the report; images by sha256, resolved from the embedded thumbnails."""

    def __init__(self, run_id: str, other: str | None):
        self.run_id, self.other = run_id, other

    def runs(self) -> str:
        return "#dashboard"

    def dashboard(self, run_id: str) -> str:
        return "#dashboard" if run_id == self.run_id else "#compare"

    def episodes(self, run_id: str, **query: Any) -> str:
        return "#episodes"

    def episode(self, run_id: str, episode_id: str) -> str:
        return "#episode/" + quote(episode_id, safe="") if run_id == self.run_id else "#episodes"

    def compare(self, run_a: str, run_b: str) -> str:
        return "#compare"

    def image(self, run_id: str, sha256: str | None) -> str | None:
        return f"img:{sha256}" if sha256 else None


def _script_json(element_id: str, value: Any) -> str:
    return f'<script type="application/json" id="{element_id}">{pages.embed_json(value)}</script>'


def _chunk(pages_by_id: dict[str, str]) -> str:
    raw = readable_json(pages_by_id).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def build_report(log: EventLog, run_id: str, out: str | os.PathLike[str], *, compare_with: str | None = None,
                 progress: Callable[[int, int], None] = lambda done, total: None) -> dict[str, int]:
    """Write the report; `progress(done, total)` is told as episode pages are rendered."""
    out = Path(out)
    check_not_the_log("report", out, log.path)
    run = data.known_run(log, run_id)
    links = ReportLinks(run_id, compare_with)
    compare_html = ""
    if compare_with:  # first: a mistyped run, or one that shares no scored case, is refused before every episode is rendered
        data.known_run(log, compare_with)
        compare_html = pages.compare_page(data.compare(log, run_id, compare_with), links)
    dashboard = pages.dashboard_page(data.dashboard(log, run_id), links)
    listing = data.episode_list(log, run_id, page_size=10**9)
    stories = data.episode_stories(log, run_id)
    images = RunImages(log, run_id)
    wanted: list[str] = []
    chunks: list[str] = []
    chunk_of: dict[str, int] = {}
    current: dict[str, str] = {}
    for done, story in enumerate(stories, 1):
        episode_id = story["episode"]["episode_id"]
        current[episode_id] = pages.episode_page(story, run, links, lambda sha: links.image(run_id, sha))
        chunk_of[episode_id] = len(chunks)
        wanted.append(story["episode"].get("image_sha256"))  # an imported episode names none
        wanted += [p["sha256"] for ev in story["events"] if ev["type"] == "tool.returned" for p in page_images((ev["payload"] or {}).get("data"))]
        if len(current) == EPISODES_PER_CHUNK:
            chunks.append(_chunk(current))
            current = {}
        progress(done, len(stories))
    if current:
        chunks.append(_chunk(current))
    thumbnails = {}
    for sha in dict.fromkeys(s for s in wanted if s):
        uri = images.thumbnail_data_uri(sha)
        if uri:
            thumbnails[sha] = uri
    rows = [{c: row[c] for c in data.EPISODE_LIST_COLUMNS} for row in listing.rows]
    nav = '<a href="#dashboard">Dashboard</a><a href="#episodes">Episodes</a>' + ('<a href="#compare">Compare</a>' if compare_with else "")
    body = (
        f'<section data-route="dashboard">{dashboard}</section>'
        f'<section data-route="episodes" hidden>{pages.run_header(run, links, "episodes")}'
        f'<div class="filters"><label>Search the list <input id="report-search" placeholder="episode, case, verdict…"></label></div>'
        f'<div class="pager"><span id="report-list-count"></span> <button type="button" id="report-prev">‹ previous</button> '
        f'<button type="button" id="report-next">next ›</button></div>'
        f'<table class="grid episodes"><thead id="report-list-head"></thead><tbody id="report-list-body"></tbody></table></section>'
        f'<section data-route="episode" hidden><div id="episode-page"></div></section>'
        + (f'<section data-route="compare" hidden>{compare_html}</section>' if compare_with else "")
    )
    meta = {"run_id": run_id, "columns": list(data.EPISODE_LIST_COLUMNS), "chunk_of": chunk_of}
    embedded = (
        _script_json("report-meta", meta) + _script_json("report-episodes", rows) + _script_json("report-images", thumbnails)
        + "".join(f'<script type="application/json" id="episode-chunk-{i}">{c}</script>' for i, c in enumerate(chunks))
    )
    scripts = "".join("<script>" + static_text(name).replace("</script", "<\\/script") + "</script>" for name in SCRIPTS)
    document = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{pages.attr(run_id)} · EviScene report</title><link rel="icon" href="data:,"><style>{static_text("viewer.css")}</style></head><body>'
        f'<header class="top"><span class="brand">EviScene report</span><nav>{nav}</nav></header><main>{body}</main>'
        f"{embedded}{scripts}</body></html>"
    )
    write_text(out, document)  # through a temporary name: an interrupted report leaves the earlier file whole
    return {"episodes": len(stories), "images": len(thumbnails), "bytes": out.stat().st_size}
