"""The eviscene command lines a message tells the user to run. Each word is quoted for a POSIX
shell: a run id, case id or path may come from anyone's log or release, and pasted bare, a
`$(…)` or `;` in it would run as the user's own shell code (a space would split it)."""

from __future__ import annotations

import shlex


def command_line(*words: object) -> str:
    """`eviscene` and `words`, each one argument to the shell however it is spelled."""
    return " ".join(["eviscene", *(shlex.quote(str(word)) for word in words)])
