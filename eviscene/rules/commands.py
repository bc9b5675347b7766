"""The eviscene command lines a message tells the user to run. Each word is quoted for a POSIX
shell: a run id, case id or path may come from anyone's log or release, and pasted bare, a
`$(…)` or `;` in it would run as the user's own shell code (a space would split it). A
command about a log that is not the one a bare `eviscene` opens here names it with `--db`."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

DEFAULT_LOG = "eviscene.duckdb"


def default_log_path() -> Path:
    """The log a command given no --db opens: $EVISCENE_DB, else ./eviscene.duckdb."""
    return Path(os.environ.get("EVISCENE_DB") or DEFAULT_LOG).expanduser().resolve()


def command_line(*words: object, log: Path | None = None) -> str:
    """`eviscene` and `words`, each one argument to the shell however it is spelled; with
    `--db LOG` first where `log` is not the log the command would open without it."""
    db = ["--db", log] if log is not None and Path(log).resolve() != default_log_path() else []
    return " ".join(["eviscene", *(shlex.quote(str(word)) for word in [*db, *words])])


def output_dir_words(out_dir: Path | str | None, run_id: str) -> tuple[object, ...]:
    """`--output-dir OUT_DIR` for a resume of `run_id`, unless it is where a resume writes by
    default (runs/RUN_ID under the folder the command runs in)."""
    if out_dir is None or Path(out_dir).resolve() == (Path("runs") / run_id).resolve():
        return ()
    return ("--output-dir", out_dir)
