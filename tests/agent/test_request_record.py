"""The request blob a `model.called` event cites: canonical JSON of the request's JSON form,
the same bytes whether orjson reads the messages as they are or pydantic dumps them first."""

import datetime
import enum
import math
import uuid
from dataclasses import dataclass

import pytest

from eviscene.agent.provider import ModelRequest
from eviscene.rules.canonical import canonical_json_bytes


def test_a_plain_request_is_its_fields_with_sorted_keys():
    request = ModelRequest(
        stage="unified_react",
        messages=[{"role": "user", "content": [{"type": "text", "text": "é\u2028"}, {"type": "image_url", "image_url": {"url": "image://sha256:ab"}}]}],
        tools=[{"type": "function", "function": {"name": "visit", "parameters": {}}}],
        sampling_seed=7,
    )
    assert request.record() == (
        b'{"messages":[{"content":[{"text":"\xc3\xa9\xe2\x80\xa8","type":"text"},'
        b'{"image_url":{"url":"image://sha256:ab"},"type":"image_url"}],"role":"user"}],'
        b'"response_schema":null,"sampling_seed":7,"stage":"unified_react",'
        b'"tools":[{"function":{"name":"visit","parameters":{}},"type":"function"}]}'
    )


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Point:
    y: int
    x: float


class Text(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        math.nan, -math.inf, -0.0, 1e16, 5e-324, 2**63 - 1, (1, "two"), "\x00\u2028é",  # orjson reads these as they are
        {3, 1}, b"bytes", datetime.datetime(2026, 12, 3, 21, 0, tzinfo=datetime.timezone.utc),  # these take the dump
        datetime.date(2026, 12, 3), Point(y=1, x=0.5), Text("sub"), {1: "int key"}, uuid.UUID(int=5), Colour.RED,
        ModelRequest(stage="unified_judgment", messages=[], sampling_seed=1),
    ],
)
def test_any_value_in_a_message_gives_the_bytes_of_the_dump(value):
    request = ModelRequest(stage="unified_react", messages=[{"role": "tool", "data": {"value": value, "list": [value]}}], sampling_seed=1)
    assert request.record() == canonical_json_bytes(request.model_dump(mode="json"))
