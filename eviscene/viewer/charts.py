"""Vega-Lite specs of the dashboard's plots (rendered in the page by the vendored
vega-embed); each is data plus a declarative encoding, styled in one place."""

from __future__ import annotations

from typing import Any

Spec = dict[str, Any]
ACCENT = "#2f6fad"
BASELINE = "#c0392b"

_CONFIG = {
    "font": "system-ui, -apple-system, Segoe UI, sans-serif",
    "view": {"stroke": None},
    "axis": {"labelFontSize": 11, "titleFontSize": 11, "titleFontWeight": 500, "gridColor": "#eceff3", "domainColor": "#c5ccd6"},
    "legend": {"labelFontSize": 11, "titleFontSize": 11},
    "title": {"fontSize": 13, "fontWeight": 600, "anchor": "start", "offset": 10},
    "range": {"category": ["#2f6fad", "#e0883a", "#3a9a6b", "#a3508f", "#c0392b", "#7f8c8d", "#b59b2b"]},
    "bar": {"color": ACCENT},
    "point": {"color": ACCENT, "filled": True, "size": 70},
}


def _spec(title: str, values: list[dict[str, Any]], body: Spec, *, width: int | str = "container", height: int = 220) -> Spec:
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "title": title,
        "width": width,
        "height": height,
        "data": {"values": values},
        "config": _CONFIG,
        **body,
    }


def bars(title: str, values: list[dict[str, Any]], category: str, value: str, *, horizontal: bool = True,
         color: str | None = None, value_title: str | None = None, category_title: str | None = None) -> Spec:
    """Counts by category, labelled with their values."""
    cat = {"field": category, "type": "ordinal" if not horizontal else "nominal", "sort": None, "title": category_title or category.replace("_", " ")}
    val = {"field": value, "type": "quantitative", "title": value_title or value.replace("_", " ")}
    if not any(row[value] for row in values):
        val["scale"] = {"domain": [0, 1]}  # all zero (an offline model's tokens): an honest empty axis
    encode = {"y": cat, "x": val} if horizontal else {"x": {**cat, "axis": {"labelAngle": 0}}, "y": val}
    if color:
        encode["color"] = {"field": color, "type": "nominal"}
    text_encode = {**encode, "text": {"field": value, "type": "quantitative"}}
    text_encode.pop("color", None)
    text = {"mark": {"type": "text", "align": "left" if horizontal else "center", "dx": 3 if horizontal else 0,
                     "dy": 0 if horizontal else -6, "fontSize": 10, "color": "#444"}, "encoding": text_encode}
    height = max(80, 24 * len(values)) if horizontal else 200
    return _spec(title, values, {"layer": [{"mark": {"type": "bar", "tooltip": True}, "encoding": encode}, text]}, height=height)


def histogram(title: str, bins: list[dict[str, Any]], axis_title: str) -> Spec:
    """Counts of SQL-binned values (`start`, `stop`, `n`)."""
    return _spec(title, bins, {
        "mark": {"type": "bar", "tooltip": True, "binSpacing": 1},
        "encoding": {
            "x": {"field": "start", "type": "quantitative", "bin": {"binned": True}, "title": axis_title},
            "x2": {"field": "stop"},
            "y": {"field": "n", "type": "quantitative", "title": "count"},
        },
    }, height=180)


def box_summary(title: str, values: list[dict[str, Any]], category: str, axis_title: str) -> Spec:
    """A box plot of quantiles computed in SQL (min, q1, median, q3, max per category)."""
    y = {"field": category, "type": "nominal", "title": category.replace("_", " ")}
    scale = {"type": "symlog"}
    axis = {"format": "~s", "tickCount": 6}
    return _spec(title, values, {
        "encoding": {"y": y},
        "layer": [
            {"mark": {"type": "rule", "color": "#7a8694"},
             "encoding": {"x": {"field": "min", "type": "quantitative", "scale": scale, "axis": axis, "title": axis_title}, "x2": {"field": "max"}}},
            {"mark": {"type": "bar", "size": 14, "color": ACCENT, "opacity": 0.85, "tooltip": {"content": "data"}},
             "encoding": {"x": {"field": "q1", "type": "quantitative"}, "x2": {"field": "q3"}}},
            {"mark": {"type": "tick", "color": "white", "size": 14, "thickness": 2},
             "encoding": {"x": {"field": "median", "type": "quantitative"}}},
        ],
    }, height=max(80, 30 * len(values)))


def metric_intervals(values: list[dict[str, Any]], baseline: float, baseline_label: str) -> Spec:
    """Point estimates with their 95% intervals, against the majority-label baseline."""
    x = {"field": "value", "type": "quantitative", "scale": {"domain": [0, 1]}, "title": "score (95% bootstrap interval)"}
    return _spec("Accuracy and macro-F1 vs the majority baseline", values, {
        "layer": [
            {"mark": {"type": "rule", "strokeWidth": 3, "color": ACCENT, "opacity": 0.5},
             "encoding": {"y": {"field": "metric", "type": "nominal", "title": None}, "x": {"field": "low", "type": "quantitative"}, "x2": {"field": "high"}}},
            {"mark": {"type": "point", "tooltip": {"content": "data"}},
             "encoding": {"y": {"field": "metric", "type": "nominal"}, "x": x}},
            {"mark": {"type": "text", "dy": -12, "fontSize": 11},
             "encoding": {"y": {"field": "metric", "type": "nominal"}, "x": {"field": "value", "type": "quantitative"},
                          "text": {"field": "value", "type": "quantitative", "format": ".3f"}}},
            {"data": {"values": [{"baseline": baseline, "label": baseline_label}]},
             "layer": [
                 {"mark": {"type": "rule", "color": BASELINE, "strokeDash": [4, 3]}, "encoding": {"x": {"field": "baseline", "type": "quantitative"}}},
                 {"mark": {"type": "text", "color": BASELINE, "align": "left", "dx": 4, "y": 0, "baseline": "top", "fontSize": 10},
                  "encoding": {"x": {"field": "baseline", "type": "quantitative"}, "text": {"field": "label"}}},
             ]},
        ],
    }, height=110)


def confusion(values: list[dict[str, Any]]) -> Spec:
    """Gold label by predicted label, rollout 0 of each case."""
    return _spec("Confusion matrix (rollout 0)", values, {
        "encoding": {
            "x": {"field": "predicted", "type": "nominal", "title": "predicted", "axis": {"labelAngle": -30}},
            "y": {"field": "gold", "type": "nominal", "title": "gold"},
        },
        "layer": [
            {"mark": {"type": "rect", "tooltip": True}, "encoding": {"color": {"field": "n", "type": "quantitative", "scale": {"scheme": "blues"}, "title": "cases"}}},
            {"mark": {"type": "text", "fontSize": 12},
             "encoding": {"text": {"field": "n", "type": "quantitative"},
                          "color": {"condition": {"test": "datum.n > 0.6 * datum.max_n", "value": "white"}, "value": "#222"}}},
        ],
    }, height=260)


def per_label(values: list[dict[str, Any]]) -> Spec:
    """Precision, recall and F1 by label."""
    return _spec("Per-label precision, recall, F1", values, {
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "x": {"field": "label", "type": "nominal", "axis": {"labelAngle": 0}, "title": None},
            "xOffset": {"field": "measure", "sort": ["precision", "recall", "f1"]},
            "y": {"field": "value", "type": "quantitative", "scale": {"domain": [0, 1]}, "title": None},
            "color": {"field": "measure", "type": "nominal", "sort": ["precision", "recall", "f1"], "title": None},
        },
    })


def reliability(bins: list[dict[str, Any]], ece: float | None) -> Spec:
    """Accuracy by confidence decile against the diagonal of perfect calibration."""
    title = "Calibration: reliability diagram" + (f" (ECE {ece:.3f})" if ece is not None else "")
    axis = {"type": "quantitative", "scale": {"domain": [0, 1]}}
    return _spec(title, bins, {
        "layer": [
            {"data": {"values": [{"x": 0, "y": 0}, {"x": 1, "y": 1}]},
             "mark": {"type": "line", "color": "#9aa5b1", "strokeDash": [4, 3]},
             "encoding": {"x": {"field": "x", **axis, "title": "mean confidence"}, "y": {"field": "y", **axis, "title": "accuracy"}}},
            {"mark": {"type": "line", "color": ACCENT},
             "encoding": {"x": {"field": "mean_confidence", **axis}, "y": {"field": "accuracy", **axis}}},
            {"mark": {"type": "point", "tooltip": {"content": "data"}},
             "encoding": {"x": {"field": "mean_confidence", **axis}, "y": {"field": "accuracy", **axis},
                          "size": {"field": "episodes", "type": "quantitative", "title": "episodes"}}},
        ],
    }, height=260)


def comparison_bars(title: str, values: list[dict[str, Any]], category: str, *, domain: list[float] | None = None) -> Spec:
    """Side-by-side values of run A and run B per category (`run`, `value`)."""
    y = {"field": "value", "type": "quantitative", "title": None}
    if domain:
        y["scale"] = {"domain": domain}
    return _spec(title, values, {
        "mark": {"type": "bar", "tooltip": True},
        "encoding": {
            "x": {"field": category, "type": "nominal", "axis": {"labelAngle": -25}, "title": None},
            "xOffset": {"field": "run"},
            "y": y,
            "color": {"field": "run", "type": "nominal", "title": None},
        },
    })
