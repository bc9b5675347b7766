"""A strict structural check of JSON data against the official SDKs' TypedDicts: every key
must be declared (no extras, unlike pydantic's TypedDict validation), every required key
present, every nested value of a declared type. Used to hold our requests to the wire
formats the `openai` SDK defines."""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any

import typing_extensions

_WRAPPERS = {typing.Required, typing.NotRequired, typing_extensions.Required, typing_extensions.NotRequired}
for _name in ("ReadOnly",):
    for _module in (typing, typing_extensions):
        if hasattr(_module, _name):
            _WRAPPERS.add(getattr(_module, _name))


class Mismatch(AssertionError):
    pass


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and (typing.is_typeddict(tp) or typing_extensions.is_typeddict(tp))


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) in _WRAPPERS or typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if isinstance(tp, typing.TypeAliasType if hasattr(typing, "TypeAliasType") else ()) or isinstance(
        tp, getattr(typing_extensions, "TypeAliasType", ())
    ):
        return _unwrap(tp.__value__)
    return tp


def check(value: Any, tp: Any, path: str = "$") -> None:
    """Raise Mismatch when `value` does not fit `tp`."""
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return
    if tp is type(None) or tp is None:
        if value is not None:
            raise Mismatch(f"{path}: expected null, got {value!r:.60}")
        return
    if origin in (typing.Union, types.UnionType):
        failures = []
        for option in typing.get_args(tp):
            try:
                check(value, option, path)
                return
            except Mismatch as exc:
                failures.append(str(exc))
        raise Mismatch(f"{path}: fits none of the options: " + " | ".join(failures[:6]))
    if origin in (typing.Literal, typing_extensions.Literal):
        if value not in typing.get_args(tp):
            raise Mismatch(f"{path}: {value!r} not in {typing.get_args(tp)}")
        return
    if _is_typeddict(tp):
        if not isinstance(value, dict):
            raise Mismatch(f"{path}: expected an object ({tp.__name__}), got {type(value).__name__}")
        hints = typing_extensions.get_type_hints(tp, include_extras=True)
        extra = sorted(set(value) - set(hints))
        if extra:
            raise Mismatch(f"{path}: keys {extra} are not in {tp.__name__}")
        missing = sorted(set(tp.__required_keys__) - set(value))
        if missing:
            raise Mismatch(f"{path}: {tp.__name__} requires {missing}")
        for key, item in value.items():
            check(item, hints[key], f"{path}.{key}")
        return
    if origin in (dict, collections.abc.Mapping) or tp is dict:
        if not isinstance(value, dict):
            raise Mismatch(f"{path}: expected an object, got {type(value).__name__}")
        args = typing.get_args(tp)
        for key, item in value.items():
            if args:
                check(item, args[1], f"{path}.{key}")
        return
    if origin in (list, collections.abc.Iterable, collections.abc.Sequence, tuple) or tp is list:
        if not isinstance(value, list):
            raise Mismatch(f"{path}: expected an array, got {type(value).__name__}")
        args = typing.get_args(tp)
        for i, item in enumerate(value):
            if args:
                check(item, args[0], f"{path}[{i}]")
        return
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Mismatch(f"{path}: expected a number, got {value!r:.60}")
        return
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Mismatch(f"{path}: expected an integer, got {value!r:.60}")
        return
    if isinstance(tp, type):
        if not isinstance(value, tp):
            raise Mismatch(f"{path}: expected {tp.__name__}, got {type(value).__name__}")
        return
    raise Mismatch(f"{path}: cannot check against {tp!r}")
