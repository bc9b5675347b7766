"""A package's public names, imported on first use (PEP 562 module `__getattr__`), so that
importing one of its modules does not load the others and their heavy libraries."""

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """`__getattr__ = lazy_getattr(__name__, {"Name": "package.module", ...})`."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
