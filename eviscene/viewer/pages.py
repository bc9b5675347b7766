"""The viewer's pages as HTML, for the live server and the one-file report alike. Every
value from the log goes through `esc` (text), `attr` (attributes) or `embed_json` (data): a caption, a page
title or a tool result that holds markup renders as text."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote, urlencode

from eviscene.rules.canonical import finite_json, finite_or_null
from eviscene.viewer import charts
from eviscene.viewer.data import EPISODE_LIST_COLUMNS, EpisodePage
from eviscene.viewer.images import page_images, walk_dicts

# Text that can reorder what stands beside it: bidi controls (U+202E reverses the rest of
# the line) and right-to-left letters (Hebrew, Arabic, Syriac, Thaana, N'Ko…).
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc"
                   "\U00010800-\U00010fff\U0001e800-\U0001efff]")


def attr(value: Any) -> str:
    """A value escaped for an attribute (or <title>, where no markup is read)."""
    return html.escape("" if value is None else str(value), quote=True)


def esc(value: Any) -> str:
    """A value escaped for text content; text that could reorder its neighbours is isolated
    in <bdi>, so an id holding U+202E reverses only itself."""
    text = attr(value)
    return f"<bdi>{text}</bdi>" if _BIDI.search(text) else text


def embed_json(value: Any) -> str:
    """JSON safe inside a <script type="application/json"> element (no `</script>`, no `<!--`), which
    JSON.parse reads: NaN and ±Infinity (an older log's imported `1e999`) are null there."""
    text = finite_json(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def shown(value: Any) -> Any:
    """A value as a table shows it: NaN and ±Infinity (an older log's imported `1e999`) as
    missing, as the page's JSON holds them (null), not as `inf`."""
    return finite_or_null(value) if isinstance(value, float) else value


def fmt(value: Any, digits: int = 3) -> str:
    value = shown(value)
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m {seconds % 60:02d}s"


class Links:
    """Where a page links to: the server's URLs (this class) or the report's anchors."""

    def runs(self) -> str:
        return "/"

    def dashboard(self, run_id: str) -> str:
        return f"/run/{quote(run_id, safe='')}"

    def episodes(self, run_id: str, **query: Any) -> str:
        query = {k: v for k, v in query.items() if v not in (None, "", False)}
        return f"/run/{quote(run_id, safe='')}/episodes" + (f"?{urlencode(query)}" if query else "")

    def episode(self, run_id: str, episode_id: str) -> str:
        return f"/run/{quote(run_id, safe='')}/episode/{quote(episode_id, safe='')}"

    def compare(self, run_a: str, run_b: str) -> str:
        return "/compare?" + urlencode({"a": run_a, "b": run_b})

    def image(self, run_id: str, sha256: str | None) -> str | None:
        return f"/image/{quote(run_id, safe='')}/{sha256}" if sha256 else None


class ChartSlot:
    """Collects a page's Vega-Lite specs; each becomes a <div> plus its JSON, under an id of the
    page's own (`prefix`): the report holds several pages in one document."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.count = prefix, 0

    def __call__(self, spec: charts.Spec, *, wide: bool = False) -> str:
        self.count += 1
        chart_id = f"{self.prefix}-chart-{self.count}"
        return (f'<figure class="chart-card{" wide" if wide else ""}"><div class="chart" data-spec="{chart_id}"></div>'
                f'<script type="application/json" id="{chart_id}">{embed_json(spec)}</script></figure>')


def stat(label: str, value: str, key: str, note: str = "") -> str:
    return (f'<div class="stat"><div class="stat-label">{esc(label)}</div>'
            f'<div class="stat-value" data-stat="{attr(key)}">{esc(value)}</div>'
            + (f'<div class="stat-note">{esc(note)}</div>' if note else "") + "</div>")


def badge(text: str, kind: str = "") -> str:
    return f'<span class="badge {attr(kind)}">{esc(text)}</span>'


def status_badge(run: dict[str, Any]) -> str:
    """The run's status; one without `run.finished` is running while a writer holds it
    (`with_progress`), else interrupted (`eval resume` finishes it)."""
    status = run["status"]
    if status == "running_or_interrupted":
        return badge("running", "live") if run.get("writing") else badge("interrupted", "warn")
    return badge(status or "–", {"completed": "ok", "incomplete": "warn"}.get(status or "", "bad"))


# ----------------------------------------------------------------------------------- runs

def runs_table(runs: list[dict[str, Any]], links: Links) -> str:
    has_label = any("label" in r for r in runs)
    head = ["", "A", "B", "run", *(["label"] if has_label else []), "status", "provider", "model", "progress",
            "rate", "ETA", "accuracy", "macro-F1", "started"]
    body = []
    for r in runs:
        if "computing_s" in r:
            body.append(_computing_row(r, links, len(head)))
            continue
        planned, finished, errored = r["episodes_planned"], r["episodes_finished"], r["episodes_errored"]
        share = finished / planned if planned else 0
        progress = (
            f'<div class="progress" title="{finished} of {planned} finished, {errored} errored">'
            f'<div class="bar" style="width:{share * 100:.1f}%"></div></div>'
            f'<span class="counts"><b data-field="episodes_finished">{finished}</b> / <span data-field="episodes_planned">{planned}</span>'
            f' · <span class="{"err" if errored else ""}" data-field="episodes_errored">{errored}</span> errored</span>'
        )
        rate = f"{r['rate_per_minute']:.1f}/min" if r.get("rate_per_minute") else "–"
        body.append(
            f'<tr data-run="{attr(r["run_id"])}">'
            f'<td>{"<span class=live-dot title=writing></span>" if r.get("writing") else ""}</td>'
            f'<td><input type="radio" name="a" value="{attr(r["run_id"])}" aria-label="compare as A"></td>'
            f'<td><input type="radio" name="b" value="{attr(r["run_id"])}" aria-label="compare as B"></td>'
            f'<td><a href="{attr(links.dashboard(r["run_id"]))}">{esc(r["run_id"])}</a></td>'
            + (f'<td>{esc(r.get("label"))}</td>' if has_label else "")
            + f'<td>{status_badge(r)}</td><td>{esc(r["provider"])}</td><td>{esc(r["model"])}</td>'
            f'<td class="progress-cell">{progress}</td><td class="num" data-field="rate">{esc(rate)}</td>'
            f'<td class="num">{esc(duration(r.get("eta_seconds")) if r.get("eta_seconds") is not None else "–")}</td>'
            f'<td class="num" data-field="accuracy">{esc(fmt(r.get("accuracy")))}</td>'
            f'<td class="num" data-field="macro_f1">{esc(fmt(r.get("macro_f1")))}</td>'
            f'<td class="muted">{esc(str(r["started_at"])[:19].replace("T", " "))}</td></tr>'
        )
    if not runs:
        body.append(f'<tr><td colspan="{len(head)}" class="muted">No runs in this log yet.</td></tr>')
    return (f'<table class="grid runs"><thead><tr>{"".join(f"<th>{esc(h)}</th>" for h in head)}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _computing(seconds: float) -> str:
    return f"computing… ({duration(seconds)} so far: the first look at a live run reads all its events)"


def _computing_row(r: dict[str, Any], links: Links, columns: int) -> str:
    """A live run whose row is being computed: its id and that, no number yet."""
    return (f'<tr data-run="{attr(r["run_id"])}" data-computing="1"><td></td><td></td><td></td>'
            f'<td><a href="{attr(links.dashboard(r["run_id"]))}">{esc(r["run_id"])}</a></td>'
            f'<td colspan="{columns - 4}" class="muted">{esc(_computing(r["computing_s"]))}</td></tr>')


def runs_page(runs: list[dict[str, Any]], links: Links, log_path: str) -> str:
    return (
        f'<h1>Runs</h1><p class="muted">{esc(log_path)} · refreshes every 2 s</p>'
        f'<form method="get" action="/compare" class="compare-form">'
        f'<div id="runs-live" data-refresh="/fragment/runs">{runs_table(runs, links)}</div>'
        f'<p><button type="submit">Compare A and B</button> <span class="muted">pick run A and run B, paired by case</span></p></form>'
    )


# ------------------------------------------------------------------------------ dashboard

def _confusion_values(labels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = [r["label"] for r in labels]
    predicted_names = sorted({p for r in labels for p in (r["confusion"] or {})} | set(names))
    values = [{"gold": r["label"], "predicted": p, "n": (r["confusion"] or {}).get(p, 0)} for r in labels for p in predicted_names]
    top = max((v["n"] for v in values), default=0)
    return [{**v, "max_n": top} for v in values]


def run_header(run: dict[str, Any], links: Links, current: str) -> str:
    tabs = [("dashboard", "Dashboard", links.dashboard(run["run_id"])), ("episodes", "Episodes", links.episodes(run["run_id"]))]
    nav = "".join(f'<a class="tab{" active" if key == current else ""}" href="{attr(href)}">{esc(text)}</a>' for key, text, href in tabs)
    return (f'<div class="run-head"><h1>{esc(run["run_id"])}</h1>'
            f'<div class="muted">{status_badge(run)} {esc(run["provider"])} · {esc(run["model"])} · release {esc(run["release_id"])}'
            + (f' · label {esc(run["label"])}' if run.get("label") else "") + "</div>"
            + (f'<p class="warn">No process writes this run: <code>{esc(run["resume"])}</code> finishes it.</p>' if run.get("resume") else "")
            + f'<nav class="tabs">{nav}</nav></div>')


def computing_page(data: dict[str, Any], links: Links) -> str:
    """A live run's dashboard while its first numbers are computed (the page reloads itself)."""
    return (f'<div class="run-head"><h1>{esc(data["run_id"])}</h1></div>'
            f'<p class="muted" data-computing="1">{esc(_computing(data["computing_s"]))}; this page reloads by itself.</p>')


def dashboard_page(data: dict[str, Any], links: Links) -> str:
    run, labels, chart = data["run"], data["labels"], ChartSlot("dashboard")
    first = labels[0] if labels else {}
    intervals = data["intervals"]
    metrics = [
        {"metric": name, "value": first.get(key), "low": intervals.get(key, (None, None))[0], "high": intervals.get(key, (None, None))[1]}
        for name, key in (("accuracy", "accuracy"), ("macro-F1", "macro_f1"))
    ] if first else []
    acc_ci = intervals.get("accuracy")
    stats = "".join([
        stat("episodes finished", f"{run['episodes_finished']} / {run['episodes_planned']}", "episodes_finished"),
        stat("errored", str(run["episodes_errored"]), "episodes_errored"),
        # an imported run has no per-label scores: its accuracy is its runs row's
        stat("accuracy (rollout 0)", fmt(first.get("accuracy", run.get("accuracy"))), "accuracy",
             f"95% CI {acc_ci[0]:.3f}–{acc_ci[1]:.3f}" if acc_ci else ""),
        stat("macro-F1", fmt(first.get("macro_f1", run.get("macro_f1"))), "macro_f1"),
        stat("majority baseline", fmt(data["majority_accuracy"]), "majority", f"always {data['majority_label']}" if data["majority_label"] else ""),
        stat("ECE", fmt(data["ece"]), "ece"),
        stat("zero-variance groups", f"{data['groups'][0]['zero_variance_groups']} / {data['groups'][0]['groups']}" if data["groups"] else "–", "zero_variance_groups"),
    ])
    plots = []
    if metrics:
        plots.append(chart(charts.metric_intervals(metrics, data["majority_accuracy"], f"majority: {data['majority_label']}"), wide=True))
        plots.append(chart(charts.confusion(_confusion_values(labels))))
        plots.append(chart(charts.per_label([{"label": r["label"], "measure": m, "value": r[m]} for r in labels for m in ("precision", "recall", "f1")])))
    if data["calibration"]:
        plots.append(chart(charts.reliability(data["calibration"], data["ece"])))
    plots.append(chart(charts.bars("Terminations", data["terminations"], "termination", "episodes")))
    if data["tool_calls_per_episode"]:
        plots.append(chart(charts.bars("Tool calls per episode", data["tool_calls_per_episode"], "tool_calls", "episodes", horizontal=False)))
    if data["tool_latency"]:
        plots.append(chart(charts.box_summary("Tool latency (ms; min, quartiles, max)", data["tool_latency"], "tool", "latency ms")))
    if data["model_latency"]:
        plots.append(chart(charts.box_summary("Model-call latency by stage (ms)", data["model_latency"], "stage", "latency ms")))
        tokens = [{"stage": r["stage"], "kind": kind, "tokens": r[f"{kind}_tokens"] or 0} for r in data["model_latency"] for kind in ("prompt", "completion")]
        plots.append(chart(charts.bars("Tokens by stage", tokens, "stage", "tokens", color="kind")))
        retries = [{"stage": r["stage"], "retries": r["retries"] or 0} for r in data["model_latency"]]
        plots.append(chart(charts.bars("Model-call retries by stage", retries, "stage", "retries")))
    titles = {"duration": ("Episode duration", "seconds"), "reward": ("Reward distribution", "reward"),
              "grpo_advantage": ("GRPO advantage", "advantage"), "rloo_advantage": ("RLOO advantage", "advantage")}
    for name, bins in data["histograms"].items():
        if bins:
            plots.append(chart(charts.histogram(titles[name][0], bins, titles[name][1])))
    if run.get("source") == "imported":  # no events: an empty plot would read as "nothing failed"
        unread = (f"<p>Not in the log: an imported run directory records them in its files (`eviscene why EPISODE --run "
                  f"{esc(run['run_id'])}` shows each episode's).</p>")
        plots.append(f'<figure class="chart-card empty"><h3>Audit failures</h3>{unread}</figure>')
        plots.append(f'<figure class="chart-card empty"><h3>Source-policy blocks</h3>{unread}</figure>')
    else:
        plots.append(chart(charts.bars("Audit failures by code", data["audit_failures"], "code", "failures", color="severity"))
                     if data["audit_failures"] else '<figure class="chart-card empty"><h3>Audit failures</h3><p>None: every trace passed.</p></figure>')
        plots.append(chart(charts.bars("Source-policy blocks by rule", data["policy_blocks"], "rule", "blocks"))
                     if data["policy_blocks"] else '<figure class="chart-card empty"><h3>Source-policy blocks</h3><p>No result was blocked.</p></figure>')
    plots.append(_dataset_section(data["dataset"], chart))
    return (run_header(run, links, "dashboard") + _imported_note(data.get("imported_from"))
            + f'<div class="stats">{stats}</div><div class="chart-grid">{"".join(plots)}</div>')


def _imported_note(imported_from: dict[str, Any] | None) -> str:
    """What an imported run directory's pages show, and where the rest of it is."""
    if not imported_from:
        return ""
    return (f'<p class="note" data-imported="1">Imported from <code>{esc(imported_from["path"])}</code> (its run id '
            f'{esc(imported_from["source_run_id"])}). The log holds its files, not its events: these are the numbers its '
            "run_results.jsonl, process_metrics.jsonl and trajectory_scores.jsonl recorded. It carries no gold, so its "
            "accuracy is rollout 0's recorded correctness and it has no macro-F1.</p>")


def _changed_note(changed: str) -> str:
    return (f'<p class="warn">The log has changed since that export ({esc(changed)}): this is its decision over the log as it '
            "is now, not the one its files hold.</p>")


def _dataset_section(dataset: dict[str, Any] | None, chart: ChartSlot) -> str:
    """The newest export that read the run: its run's episodes, accepted or excluded by decisive
    reason, replayed over the log as it is now (with a note where that differs from what the
    export read); its rows by split as its files hold them."""
    if dataset is None:
        return '<figure class="chart-card empty"><h3>Dataset export</h3><p>No dataset export has read this run.</p></figure>'
    manifest = dataset["manifest"]
    outcome = [{"outcome": "accepted", "episodes": dataset["accepted"]}] + [
        {"outcome": f"excluded: {r['reason']}", "episodes": r["episodes"]} for r in dataset["excluded"]]
    splits = [{"split": k, "rows": v} for k, v in (manifest.get("example_counts") or {}).items()]
    parts = [_changed_note(dataset["changed_since"])] if dataset["changed_since"] else []
    parts.append(chart(charts.bars(f"Latest dataset export ({dataset['out_dir']}): this run's episodes", outcome, "outcome", "episodes")))
    if splits:
        parts.append(chart(charts.bars("Dataset rows by split, as its files hold them", splits, "split", "rows", horizontal=False)))
    if dataset["group_sizes"]:
        parts.append(chart(charts.bars("Split groups by size", dataset["group_sizes"], "members", "groups", horizontal=False)))
    return "".join(parts)


# ------------------------------------------------------------------------------- episodes

def episodes_table(run_id: str, found: EpisodePage, links: Links, *, predicate: str, search: str, sort: str, descending: bool) -> str:
    def header(column: str) -> str:
        flip = column == sort and not descending
        arrow = (" ▼" if descending else " ▲") if column == sort else ""
        href = links.episodes(run_id, filter=predicate, q=search, sort=column, desc=int(flip) or None)
        return f'<th><a href="{attr(href)}">{esc(column.replace("_", " "))}{arrow}</a></th>'

    body = []
    for row in found.rows:
        cells = []
        for column in EPISODE_LIST_COLUMNS:
            value = shown(row[column])
            if column == "episode_id":
                cells.append(f'<td><a href="{attr(links.episode(run_id, value))}">{esc(value)}</a></td>')
            elif column == "result_correct":
                cells.append(f'<td>{badge("correct", "ok") if value else badge("wrong", "bad") if value is False else "–"}</td>')
            else:
                cells.append(f'<td class="{"num" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""}">{esc(fmt(value))}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    if not found.rows:
        body.append(f'<tr><td colspan="{len(EPISODE_LIST_COLUMNS)}" class="muted">No episode matches.</td></tr>')
    return f'<table class="grid episodes"><thead><tr>{"".join(header(c) for c in EPISODE_LIST_COLUMNS)}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def episodes_page(run: dict[str, Any], found: EpisodePage | None, links: Links, *, predicate: str, search: str,
                  sort: str, descending: bool, error: str | None) -> str:
    run_id = run["run_id"]
    form = (
        f'<form method="get" class="filters" action="{attr(links.episodes(run_id))}">'
        f'<label>SQL filter <input name="filter" value="{attr(predicate)}" placeholder="verdict &lt;&gt; gold_label AND total_tool_calls &gt; 5" size="60"></label>'
        f'<label>Search messages and tool results <input name="q" value="{attr(search)}" placeholder="text"></label>'
        f'<input type="hidden" name="sort" value="{attr(sort)}">' + ('<input type="hidden" name="desc" value="1">' if descending else "")
        + '<button type="submit">Apply</button></form>'
    )
    if error:
        return run_header(run, links, "episodes") + form + f'<p class="error" role="alert">Refused: {esc(error)}</p>'
    assert found is not None
    pages = max(1, -(-found.total // found.page_size))
    nav_query = {"filter": predicate, "q": search, "sort": sort, "desc": int(descending) or None}
    pager = (
        f'<div class="pager"><span data-stat="matching">{found.total}</span> episodes · page {found.page} of {pages} '
        + (f'<a href="{attr(links.episodes(run_id, **nav_query, page=found.page - 1))}">‹ previous</a> ' if found.page > 1 else "")
        + (f'<a href="{attr(links.episodes(run_id, **nav_query, page=found.page + 1))}">next ›</a>' if found.page < pages else "")
        + "</div>"
    )
    table = episodes_table(run_id, found, links, predicate=predicate, search=search, sort=sort, descending=descending)
    return run_header(run, links, "episodes") + form + pager + table + pager


# -------------------------------------------------------------------------------- episode

def _pre(text: Any, css: str = "") -> str:
    return f'<pre class="{css}">{esc(text)}</pre>' if text not in (None, "") else ""


def _json_block(value: Any) -> str:
    return _pre(json.dumps(value, ensure_ascii=False, indent=2), "json")


def _pages_in(data: Any) -> list[dict[str, Any]]:
    """The evidence pages a tool result shows: {evidence_id, url, title, site_name, published}."""
    found, seen = [], set()
    for node in walk_dicts(data):
        if isinstance(node.get("evidence_id"), str) and isinstance(node.get("url"), str) and node["evidence_id"] not in seen:
            seen.add(node["evidence_id"])
            found.append(node)
    return found


def _evidence_list(payload: dict[str, Any], cited: set[str], image: Callable[[str], str | None]) -> str:
    pages = _pages_in(payload.get("data")) or payload.get("sources") or []
    items = []
    for page in pages:
        evidence_id = page.get("evidence_id", "")
        items.append(
            f'<li class="{"cited" if evidence_id in cited else ""}"><span class="ev">{esc(evidence_id)}</span> '
            f'<span class="page-title">{esc(page.get("title") or "(untitled)")}</span> '
            f'<span class="muted">{esc(page.get("site_name") or "")} {esc(page.get("published") or "")}</span>'
            f'<div class="url">{esc(page.get("url"))}</div></li>'
        )
    figures = []
    for picture in page_images(payload.get("data")):
        src = image(picture["sha256"])
        figures.append(
            '<figure class="thumb">' + (f'<img src="{attr(src)}" alt="{attr(picture["alt"])}">' if src else '<div class="no-image">image not available</div>')
            + f'<figcaption>{esc(picture["alt"])}<div class="url">{esc(picture["image_url"])}</div></figcaption></figure>'
        )
    return (f'<ul class="evidence">{"".join(items)}</ul>' if items else "") + (f'<div class="thumbs">{"".join(figures)}</div>' if figures else "")


def _event(event: dict[str, Any], cited: set[str], image: Callable[[str], str | None]) -> str:
    kind, p = event["type"], event["payload"] or {}
    body = ""
    if kind == "perception.reported":
        body = _pre(p.get("ocr_text"), "ocr") + f'<div class="muted">backend {esc(p.get("backend"))} · phash {esc(p.get("image_phash"))}</div>'
    elif kind == "model.called":
        calls = "".join(f'<div class="call">→ <b>{esc(c.get("name"))}</b>{_json_block(c.get("arguments"))}</div>' for c in p.get("tool_calls") or [])
        usage = p.get("usage") or {}
        body = (f'<div class="muted">{esc(p.get("stage"))} · {esc(p.get("model"))} · {esc(fmt(p.get("latency_ms"), 1))} ms · '
                f'{esc(usage.get("prompt_tokens"))}+{esc(usage.get("completion_tokens"))} tokens · {len(p.get("retries") or [])} retries</div>'
                + (f'<div class="label">reasoning</div>{_pre(p.get("reasoning"), "reasoning")}' if p.get("reasoning") else "")
                + (f'<div class="label">message</div>{_pre(p.get("content"))}' if p.get("content") else "")
                + calls + (f'<p class="error">{esc(p.get("error"))}</p>' if p.get("error") else ""))
    elif kind == "tool.called":
        body = f'<b>{esc(p.get("tool"))}</b> {esc(p.get("call_id"))}{_json_block(p.get("arguments"))}'
    elif kind == "tool.returned":
        body = (f'<b>{esc(p.get("tool"))}</b> {badge(p.get("status") or "", "ok" if p.get("status") == "ok" else "warn")} '
                f'<span class="muted">{esc(fmt(p.get("latency_ms"), 1))} ms{" · cache hit" if p.get("cache_hit") else ""}</span>'
                + _evidence_list(p, cited, image)
                + f'<details><summary>observation</summary>{_pre(p.get("observation"))}</details>'
                + (f'<p class="error">{esc(p.get("error"))}</p>' if p.get("error") else ""))
    elif kind == "gate.decided":
        passed = p.get("passed")
        body = (f'<b>{esc(p.get("gate"))}</b> {badge("passed" if passed else "blocked", "ok" if passed else "bad")} '
                f'<span class="url">{esc(p.get("subject"))}</span> {esc(", ".join(p.get("reasons") or []))}')
    elif kind == "judgment.made":
        body = _judgment(p, cited)
    elif kind == "episode.finished":
        body = f'{esc(p.get("termination"))} after {esc(p.get("time_taken"))} s' + (f'<p class="error">{esc(p.get("error"))}</p>' if p.get("error") else "")
    elif kind == "episode.started":
        body = f'attempt {esc(p.get("attempt"))}'
    else:
        body = _json_block(p)
    return (f'<li class="event t-{attr(kind.replace(".", "-"))}"><div class="event-head"><span class="step">#{esc(event["step"])}</span>'
            f'<span class="type">{esc(kind)}</span></div><div class="event-body">{body}</div></li>')


def _judgment(p: dict[str, Any], cited: set[str]) -> str:
    basis = "".join(f'<li class="cited"><span class="ev">{esc(b.get("evidence_id"))}</span> {esc(b.get("finding"))}</li>' for b in p.get("verdict_basis") or [])
    return (f'<div class="verdict">{badge(p.get("verdict") or "no verdict", "verdict")} confidence {esc(fmt(p.get("confidence"), 2))}</div>'
            + _pre(p.get("rationale")) + (f'<ul class="evidence">{basis}</ul>' if basis else ""))


def _kv_table(pairs: list[tuple[str, Any]]) -> str:
    return '<table class="kv">' + "".join(f"<tr><th>{esc(k)}</th><td>{esc(fmt(v))}</td></tr>" for k, v in pairs) + "</table>"


def _outcome(value: bool | None, yes: str, no: str) -> str:
    """A gate's outcome; none where nothing was recorded (an imported directory's row may lack it)."""
    return badge(yes, "ok") if value is True else badge(no, "bad") if value is False else badge("not recorded")


def episode_page(story: dict[str, Any], run: dict[str, Any], links: Links, image: Callable[[str], str | None]) -> str:
    e, run_id = story["episode"], story["run_id"]
    recorded = e.get("verdict_basis")  # an imported row's may hold anything
    basis = [b for b in recorded if isinstance(b, dict)] if isinstance(recorded, list) else []
    cited = {b["evidence_id"] for b in basis if isinstance(b.get("evidence_id"), str)}
    correct = e.get("result_correct")
    head = (
        f'<p class="crumbs"><a href="{attr(links.runs())}">Runs</a> › <a href="{attr(links.dashboard(run_id))}">{esc(run_id)}</a> › '
        f'<a href="{attr(links.episodes(run_id))}">Episodes</a></p>'
        f'<h1>{esc(e["episode_id"])}</h1><p class="muted">case {esc(e["case_id"])} · rollout {esc(e["rollout_index"])} · group {esc(e["prompt_group_id"])}'
        + (f' · attempts {esc(e["attempts"])}' if "attempts" in e else "") + "</p>"
    )
    imported = story.get("imported_from")
    src = image(e.get("image_sha256"))
    picture = (f'<figure class="case-image"><img src="{attr(src)}" alt="case image {attr(e["case_id"])}"></figure>' if src
               else '<figure class="case-image"><div class="no-image">case image not available</div></figure>')
    outcome = _kv_table([
        ("verdict", e.get("verdict")), ("gold", e.get("gold_label")), ("correct", correct), ("confidence", e.get("confidence")),
        ("termination", e.get("termination")), ("time taken (s)", e.get("time_taken")), ("tool calls", e.get("total_tool_calls")),
        ("model calls", e.get("llm_api_calls")), ("evidence recall", e.get("evidence_recovery_recall")),
        ("fact recall", e.get("fact_recovery_recall")), ("bridge recall", e.get("chain_recovery_recall")),
        ("basis precision", e.get("basis_reference_precision")),
    ])
    judgment = next((ev["payload"] for ev in story["events"] if ev["type"] == "judgment.made"), None)
    if story.get("imported_from") and e.get("verdict") is not None:  # its run_results.jsonl row holds the judgment
        judgment = {"verdict": e["verdict"], "confidence": e.get("confidence"), "verdict_basis": basis}
    judgment_html = _judgment(judgment, cited) if judgment else '<p class="muted">No judgment.</p>'
    evidence_rows = "".join(
        f'<tr class="{"cited" if ev["evidence_id"] in cited else ""}"><td>{esc(ev["evidence_id"])}{" ★" if ev["evidence_id"] in cited else ""}</td>'
        f'<td class="url">{esc(ev["url"])}</td><td>{esc(ev["published"])}</td><td>{esc(fmt(ev["visited"]))}</td></tr>'
        for ev in story["evidence"]
    )
    evidence = (f'<table class="grid"><thead><tr><th>evidence</th><th>url</th><th>published</th><th>visited</th></tr></thead><tbody>{evidence_rows}</tbody></table>'
                if evidence_rows else '<p class="muted">No evidence was shown.</p>')
    timeline = f'<ol class="timeline">{"".join(_event(ev, cited, image) for ev in story["events"])}</ol>'
    if imported:  # no events: say where the episode's steps are rather than show none
        trace = str(PurePosixPath(imported["path"]) / (e.get("trace_path") or "traces"))  # an absolute trace_path as it is
        timeline = (f'<p class="note">An imported run directory: the log holds its files, not its events. This episode\'s '
                    f'steps are in its trace, <code>{esc(trace)}</code>, as imported.</p>')
        evidence = '<p class="muted">In its trace, whose path the timeline names.</p>'
    score = story["score"]
    if score:
        weights = score.get("weights") or {}
        rows = "".join(
            f'<tr><td>{esc(name)}</td><td class="num">{esc(fmt(value))}</td><td class="num">{esc(fmt(weights.get(name)))}</td>'
            f'<td class="num">{esc(fmt(value * weights[name]) if name in weights and value is not None else "–")}</td></tr>'
            for name, value in (score["components"] or {}).items()
        )
        scores = (f'<table class="grid"><thead><tr><th>reward term</th><th>value</th><th>weight</th><th>contribution</th></tr></thead>'
                  f'<tbody>{rows}<tr class="total"><td>total</td><td></td><td></td><td class="num" data-stat="reward">{esc(fmt(score["total"]))}</td></tr></tbody></table>')
    else:
        scores = '<p class="muted">Not scored (unfinished).</p>'
    audit = story["audit"]
    audit_html = (f'<p>hard {_outcome(audit["hard_trace_audit_pass"], "pass", "fail")} '
                  f'strict {_outcome(audit["strict_trace_audit_pass"], "pass", "fail")}</p>' if audit else "")
    audit_html += ("<ul>" + "".join(f'<li>{badge(f["severity"], "warn")} <b>{esc(f["code"])}</b> {esc(f["detail"])}</li>' for f in story["failures"]) + "</ul>"
                   if story["failures"] else '<p class="muted">No audit failure.</p>')
    el = story["eligibility"]
    eligibility = (f'<p>SFT {_outcome(el["sft_training_eligible"], "eligible", "not eligible")} '
                   f'RL reward {_outcome(el["rl_reward_eligible"], "eligible", "not eligible")}</p>'
                   + "<ul>" + "".join(f"<li>{esc(r)}</li>" for r in el["exclusion_reasons"] or []) + "</ul>") if el else ""
    siblings = "".join(
        f'<div class="sibling{" current" if m["episode_id"] == e["episode_id"] else ""}">'
        f'<a href="{attr(links.episode(run_id, m["episode_id"]))}">rollout {esc(m["rollout_index"])}</a>'
        f'<div>{badge(m["verdict"] or "–", "verdict")} {badge("correct", "ok") if m["classification_correct"] else badge("wrong", "bad")}</div>'
        + _kv_table([("confidence", m["confidence"]), ("tool calls", m["total_tool_calls"]), ("reward", m["reward"]),
                     ("GRPO", m["grpo_advantage"]), ("RLOO", m["rloo_advantage"])]) + "</div>"
        for m in story["group"]
    )
    group = story["group"][0] if story["group"] else None
    if imported:
        siblings = '<p class="muted">Its directory\'s post_rollout_rewards.jsonl (imported with it) records the group; this page does not read it.</p>'
    group_note = (f'<p class="muted">group mean {fmt(group["reward_mean"])}, std {fmt(group["reward_std"])}'
                  + (" · zero variance: no learning signal" if group["is_std_zero"] else "") + "</p>") if group else ""
    fate = story["dataset"]
    if fate is None:
        dataset = '<p class="muted">No dataset export has read this run.</p>'
    elif fate.get("not_a_candidate"):
        dataset = (f'<p>Not a candidate of the export {esc(fate["out_dir"])} that read this run '
                   "(unfinished, or an action-only release episode).</p>")
    else:
        dataset = _kv_table([("export", fate["out_dir"]), ("accepted", fate["accepted"]), ("selected", fate["selected"]),
                             ("excluded because", fate["excluded_because"]), ("best rollout of the case", fate["case_best_episode_id"]),
                             ("split", fate["split"]), ("split group", fate["split_group_id"]), ("SFT route", fate["sft_route"])])
    if fate and fate["changed_since"]:
        dataset = _changed_note(fate["changed_since"]) + dataset
    return (
        head
        + f'<div class="episode-top">{picture}<section class="card"><h2>Outcome</h2>{outcome}</section>'
        + f'<section class="card"><h2>Judgment</h2>{judgment_html}</section></div>'
        + f'<section class="card"><h2>Evidence shown</h2><p class="muted">★ cited by the judgment</p>{evidence}</section>'
        + f'<section class="card"><h2>Timeline</h2>{timeline}</section>'
        + f'<div class="two"><section class="card"><h2>Scores and reward terms</h2>{scores}</section>'
        + f'<section class="card"><h2>Audit</h2>{audit_html}<h2>Training eligibility</h2>{eligibility}</section></div>'
        + f'<section class="card"><h2>Rollout group</h2>{group_note}<div class="siblings">{siblings}</div></section>'
        + f'<section class="card"><h2>Dataset fate</h2>{dataset}</section>'
    )


# -------------------------------------------------------------------------------- compare

def _difference(a: float | None, b: float | None) -> str:
    return "–" if a is None or b is None else f"{b - a:+.2f}"


def compare_page(data: dict[str, Any], links: Links) -> str:
    result, chart = data["result"], ChartSlot("compare")
    a, b = result.run_a, result.run_b
    stats = "".join([
        stat("shared cases", str(len(result.cases)), "shared_cases"),
        stat("accuracy A", fmt(result.accuracy_a), "accuracy_a"),
        stat("accuracy B", fmt(result.accuracy_b), "accuracy_b"),
        stat("difference B − A", f"{result.difference:+.3f}", "difference", f"95% CI {result.ci_low:+.3f} to {result.ci_high:+.3f}"),
        stat("only A right", str(result.only_a_right), "only_a_right"),
        stat("only B right", str(result.only_b_right), "only_b_right"),
    ])
    label_values = [{"label": r["label"], "run": run, "value": r[f"f1_{side}"]} for r in data["labels"] for run, side in (("A", "a"), ("B", "b"))]
    tool_values = [{"tool": r["tool"], "run": run, "value": r[f"per_episode_{side}"]} for r in data["tools"] for run, side in (("A", "a"), ("B", "b"))]
    plots = []
    if label_values:
        plots.append(chart(charts.comparison_bars("F1 by label", label_values, "label", domain=[0, 1])))
    if tool_values:
        plots.append(chart(charts.comparison_bars("Tool calls per finished episode", tool_values, "tool")))
    label_rows = "".join(
        f'<tr><td>{esc(r["label"])}</td>' + "".join(f'<td class="num">{esc(fmt(r[f"{m}_a"]))}</td><td class="num">{esc(fmt(r[f"{m}_b"]))}</td>'
                                                  f'<td class="num delta">{r[m + "_b"] - r[m + "_a"]:+.3f}</td>'
                                                  for m in ("precision", "recall", "f1")) + "</tr>"
        for r in data["labels"]
    )
    tool_rows = "".join(
        # a run with no finished episode in `episodes` (an imported one) has no tool calls the log knows
        f'<tr><td>{esc(r["tool"])}</td><td class="num">{"–" if r["per_episode_a"] is None else r["calls_a"]}</td>'
        f'<td class="num">{"–" if r["per_episode_b"] is None else r["calls_b"]}</td>'
        f'<td class="num">{fmt(r["per_episode_a"], 2)}</td><td class="num">{fmt(r["per_episode_b"], 2)}</td>'
        f'<td class="num delta">{_difference(r["per_episode_a"], r["per_episode_b"])}</td></tr>'
        for r in data["tools"]
    )
    # The per-label and tool tables are each run's own figures: over other cases than the
    # paired ones above where the runs did not run the same cases (an imported run: none known).
    cases = data.get("cases") or {}
    shared = len(result.cases)
    whole_runs = (
        f'<p class="muted">Each run over all its own cases (A {esc(cases["a"])}, B {esc(cases["b"])}), not only the {shared} both ran.</p>'
        if cases.get("a") and cases.get("b") and (cases["a"], cases["b"]) != (shared, shared) else ""
    )
    flipped = "".join(
        f'<tr><td>{esc(c["case_id"])}</td><td>{esc(c["label"])}</td><td>{esc(c["verdict_a"])} {badge("right", "ok") if c["correct_a"] else badge("wrong", "bad")}</td>'
        f'<td>{esc(c["verdict_b"])} {badge("right", "ok") if c["correct_b"] else badge("wrong", "bad")}</td></tr>'
        for c in data["flipped"]
    )
    return (
        f'<h1>Compare runs</h1><p>A <a href="{attr(links.dashboard(a))}">{esc(a)}</a><br>B <a href="{attr(links.dashboard(b))}">{esc(b)}</a></p>'
        f'<p class="muted">Paired by case (rollout 0); interval: percentile bootstrap over cases.</p>'
        f'<div class="stats">{stats}</div><div class="chart-grid">{"".join(plots)}</div>'
        f'<section class="card"><h2>Cases that flipped (<span data-stat="flipped">{len(data["flipped"])}</span>)</h2>'
        + (f'<table class="grid"><thead><tr><th>case</th><th>gold</th><th>A</th><th>B</th></tr></thead><tbody>{flipped}</tbody></table>' if flipped else '<p class="muted">None.</p>')
        + f'</section><section class="card"><h2>Per-label deltas</h2>{whole_runs}<table class="grid"><thead><tr><th>label</th>'
        + "".join(f"<th>{m} A</th><th>{m} B</th><th>Δ</th>" for m in ("precision", "recall", "F1"))
        + f'</tr></thead><tbody>{label_rows}</tbody></table></section>'
        f'<section class="card"><h2>Tool use</h2>{whole_runs}<table class="grid"><thead><tr><th>tool</th><th>calls A</th><th>calls B</th>'
        f'<th>per episode A</th><th>per episode B</th><th>Δ</th></tr></thead><tbody>{tool_rows}</tbody></table></section>'
    )


# --------------------------------------------------------------------------------- layout

def layout(title: str, body: str, *, scripts: str, styles: str) -> str:
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{attr(title)} · EviScene</title>{styles}</head><body>"
        '<header class="top"><a class="brand" href="/">EviScene</a><nav><a href="/">Runs</a></nav></header>'
        f'<main>{body}</main>{scripts}</body></html>'
    )
