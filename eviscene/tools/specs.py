"""The embedded tools as the model sees them (OpenAI-style function specs), their ablation
families, and validation of a call's arguments against its spec."""

from __future__ import annotations

from typing import Any, Optional

from eviscene.rules.tool_families import TOOL_FAMILIES

DEFAULT_RESULTS = 5
MAX_RESULTS = 10

IMAGE_URL_HELP = (
    "Corpus images are addressed as `<page url>#image=<path>`, exactly as search results "
    "list them."
)

_MAX_RESULTS_PARAM = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_RESULTS,
    "description": f"How many results to return (default {DEFAULT_RESULTS}, at most {MAX_RESULTS}).",
}

_SPECS: dict[str, dict[str, Any]] = {
    "text_search": {
        "description": "Search the web for pages whose title or text matches the query (keyword search, best matches first).",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "Keywords, e.g. names, places, dates or quoted caption words."},
                "max_results": _MAX_RESULTS_PARAM,
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    "text_image_search": {
        "description": "Search for images whose description (alt text) or page title matches the query. " + IMAGE_URL_HELP,
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "Words describing the picture."},
                "max_results": _MAX_RESULTS_PARAM,
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    "reverse_image_search": {
        "description": (
            "Find pages that show the same picture (also resized, cropped, recompressed or edited copies). "
            "Without arguments it searches with the case image. " + IMAGE_URL_HELP
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "image_url": {"type": "string", "minLength": 1, "description": "Optional: search with this image instead of the case image."},
                "max_results": _MAX_RESULTS_PARAM,
            },
            "required": [],
            "additionalProperties": False,
        },
    },
    "visit": {
        "description": "Open a web page and read its title, date, author, text and the images it shows.",
        "parameters": {
            "type": "object",
            "properties": {"url": {"type": "string", "minLength": 1, "description": "The page URL."}},
            "required": ["url"],
            "additionalProperties": False,
        },
    },
    "compare_with_reference": {
        "description": (
            "Compare the case image with a reference image: is it the same picture, and was a region of it "
            "changed (an object added or removed)? Captions printed on the case image are ignored. " + IMAGE_URL_HELP
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "reference_image_url": {"type": "string", "minLength": 1, "description": "The reference image (`<page url>#image=<path>`)."},
            },
            "required": ["reference_image_url"],
            "additionalProperties": False,
        },
    },
}

ALL_TOOLS: tuple[str, ...] = tuple(name for names in TOOL_FAMILIES.values() for name in names)


def tool_spec(name: str) -> dict[str, Any]:
    """The OpenAI-style function spec of one tool."""
    spec = _SPECS[name]
    return {"type": "function", "function": {"name": name, "description": spec["description"], "parameters": spec["parameters"]}}


RAW_ARGUMENTS = "_raw"
"""Key under which a provider keeps tool-call arguments that were not a JSON object, verbatim."""


def validate_arguments(name: str, arguments: Any) -> Optional[str]:
    """Why `arguments` do not fit the tool's parameter schema, or None when they do."""
    schema = _SPECS[name]["parameters"]
    if not isinstance(arguments, dict):
        return f"{name}: arguments must be a JSON object, got {type(arguments).__name__}"
    if set(arguments) == {RAW_ARGUMENTS}:
        raw = str(arguments[RAW_ARGUMENTS])
        return f"{name}: the arguments are not valid JSON: {raw[:200]!r}"
    for key in schema["required"]:
        if key not in arguments:
            return f"{name}: missing required argument {key!r}"
    for key, value in arguments.items():
        prop = schema["properties"].get(key)
        if prop is None:
            allowed = ", ".join(schema["properties"])
            return f"{name}: unexpected argument {key!r} (allowed: {allowed})"
        problem = _check_value(prop, value)
        if problem:
            return f"{name}: argument {key!r} {problem}"
    return None


def _check_value(prop: dict[str, Any], value: Any) -> Optional[str]:
    if prop["type"] == "string":
        if not isinstance(value, str):
            return f"must be a string, got {type(value).__name__}"
        if len(value.strip()) < prop.get("minLength", 0):
            return "must not be empty"
    elif prop["type"] == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer, got {type(value).__name__}"
        if value < prop.get("minimum", value) or value > prop.get("maximum", value):
            return f"must be between {prop['minimum']} and {prop['maximum']}, got {value}"
    return None
