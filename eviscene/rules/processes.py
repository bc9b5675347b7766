"""How a process is named where it holds something (a run's lock, a provider quota, the
log's archive): `eviscene sql`, `eviscene eval run`, from its command line."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

_TAKES_A_VALUE = {"--db"}  # eviscene's own options before its subcommand
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9-]*")


def command_name(argv: Sequence[str]) -> str:
    """`eviscene eval run` of `/venv/bin/python /venv/bin/eviscene --db L eval run --limit 2`:
    the program's file name (past a Python interpreter) and up to two subcommand words, its
    options and their values left out. A word that is no subcommand's (a query, a path) ends
    the name, so no argument of the command is shown."""
    words = [word for word in argv if word]
    if words and os.path.basename(words[0]).startswith("python"):
        words = words[1:]
        if words[:1] == ["-m"]:
            words = words[1:]
        elif words[:1] == ["-c"]:
            return "python -c"
    if not words:
        return ""
    named, skip_value = [os.path.basename(words[0])], False
    for word in words[1:]:
        if skip_value:
            skip_value = False
        elif word.startswith("-"):
            skip_value = word in _TAKES_A_VALUE
        elif _SUBCOMMAND.fullmatch(word) and len(named) < 3:
            named.append(word)
        else:
            break
    return " ".join(named)
