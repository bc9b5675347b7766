"""A package's public names, imported on first use (PEP 562 module `__getattr__`), so that
importing one of its modules does not load the others and their heavy libraries; `dir()`
lists them all the same (PEP 562 `__dir__`), for tab completion and `help()`."""

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__, __dir__ = lazy_exports(__name__, {"Name": "package.module", ...})`."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
