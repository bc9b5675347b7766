"""The one rule for a path an input names (a release manifest's artifact, a case's image, a
corpus page's picture, a file of an imported directory): it stays inside its root, symlinks
included. A link that leads out is refused, never followed: whatever it points at would be
read with the reader's rights and, for an import, kept for good in the append-only log.

A link that stays inside is followed (a release may link one image to another). Every
problem is a `PathEscapeError` saying where the path leads; callers add what named it and
turn it into their own error type.

And an input is a regular file or a folder, never a named pipe, socket or device
(`special_file_kind`): reading a pipe waits for a writer, forever when none comes, and a
device may never end."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class PathEscapeError(ValueError):
    """`path 'x' …`: the path is not a usable relative path, or it leads out of its root."""


def resolve_inside(root: Path, relative: Any, *, root_name: str, refuse_only_escapes: bool = False) -> Path:
    """`root / relative` with every symlink followed, refusing anything that could leave
    `root` (already resolved; `root_name` says what it is, e.g. "release root"): a
    non-string or empty path, an absolute one, a `..` part, one that cannot be resolved
    (a symlink loop, a NUL byte), and one that resolves outside `root`. With
    `refuse_only_escapes`, an absolute path or a `..` part that resolves inside `root` (or
    to it) is taken: where the seed judges the resolved path alone (an accepted release's
    runtime store), a path it takes is not refused for its spelling."""
    if not isinstance(relative, str) or not relative.strip():
        raise PathEscapeError(f"path must be a non-empty string, got {relative!r}")
    if not refuse_only_escapes:
        if (
            PurePosixPath(relative).is_absolute()
            or PureWindowsPath(relative).is_absolute()
            or PureWindowsPath(relative).drive
        ):
            raise PathEscapeError(f"path {relative!r} is absolute; it must be relative to the {root_name} {root}")
        if ".." in PureWindowsPath(relative).parts:
            raise PathEscapeError(f"path {relative!r} contains '..'; it must stay inside the {root_name} {root}")
    try:
        resolved = (root / relative).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise PathEscapeError(f"path {relative!r} cannot be resolved: {exc}") from None
    if not resolved.is_relative_to(root):
        raise PathEscapeError(f"path {relative!r} resolves to {resolved}, outside the {root_name} {root}")
    return resolved


def special_file_kind(path: str | os.PathLike[str]) -> str | None:
    """What `path` is (links followed) when it is neither a regular file nor a folder, e.g.
    `a named pipe (FIFO)`; None for a regular file, a folder, or nothing there (the caller's
    own check says it is missing). Checked before a file is opened, since opening a pipe
    for reading already waits for a writer."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((kind for is_kind, kind in _SPECIAL_KINDS if is_kind(mode)), "a special file")


def not_a_file(path: Path, expected: str = "a file") -> str:
    """Why `path` is no file to read, as a phrase: a folder, the special file it is (a named
    pipe, say), else missing."""
    if path.is_dir():
        return f"is a folder, not {expected}"
    kind = special_file_kind(path)
    return f"is {kind}, not a regular file" if kind else "does not exist"


def undecodable_name(name: str, *, way_out: str) -> str | None:
    """Why `name`, as the system gave it (an argument, a path, a file found in a folder), is
    no text the log can hold, or None when it is: one from a Latin-1 system is no UTF-8 (the
    user renames it, `way_out`); under a C locale with PYTHONUTF8=0 Python reads even UTF-8
    names as ASCII (a setting helps). DuckDB and orjson refuse such text with a traceback."""
    try:
        name.encode("utf-8")
        return None
    except UnicodeEncodeError:
        raw = os.fsencode(name)  # the bytes as given
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{name!a} is not UTF-8 text (byte {raw[exc.start]:#04x}), which the log and its files hold only; {way_out}"
    return (f"{name!a} is not text this Python can read: it reads arguments and file names as {sys.getfilesystemencoding()} "
            "here (a C locale with PYTHONUTF8=0); set PYTHONUTF8=1 or a UTF-8 locale (LC_ALL=C.UTF-8)")
