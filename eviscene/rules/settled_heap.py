"""A long phase that allocates many short-lived objects over a large heap that no longer
changes (an import's plan of every file; a run's corpus indexes, OCR models and release)
leaves the objects that exist when it starts out of the garbage collector's collections
while it runs. Otherwise each full collection walks all of them: ~0.8 s CPU of an import of
100k files, and a 70-100 ms pause of a run's event loop (every episode in flight waits)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def settled_heap() -> Iterator[None]:
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
