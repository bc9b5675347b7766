"""The README's tour prints what the commands print: each console command whose output does
not depend on the clock runs over a real offline run of the bundled release, and its output
must equal the README's, character for character."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The commands checked, by a phrase of each: the others print times, paths or run ids.
CHECKED = (
    "GROUP BY type ORDER BY n DESC, type",
    "FROM classification_metrics ORDER BY label",
    "JOIN 'labels.csv' l ON l.label = e.verdict",
)


def _console_commands() -> list[tuple[str, str]]:
    """(command, printed output) of every `$ ` line in the README's console blocks; a command
    goes on over indented lines, and its output runs to the next command or blank line."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```console\n(.*?)```", readme, flags=re.S):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            lines = chunk.split("\n")
            command = [lines.pop(0)]
            while lines and lines[0].startswith(" "):
                command.append(lines.pop(0))
            output = "\n".join(lines).split("\n\n")[0].strip("\n")
            found.append(("\n".join(command), output))
    return found


def test_every_checked_command_is_in_the_readme():
    commands = [command for command, _ in _console_commands()]
    for phrase in CHECKED:
        assert sum(phrase in command for command in commands) == 1, phrase


@pytest.mark.parametrize("phrase", CHECKED)
def test_the_readme_prints_what_the_command_prints(offline_run, tmp_path, phrase):
    log, _ = offline_run
    shutil.copy(log.path, tmp_path / "eviscene.duckdb")
    commands = _console_commands()
    index = next(i for i, (command, _) in enumerate(commands) if phrase in command)
    setup = [command for command, _ in commands[:index] if command.startswith("printf ")]
    command, printed = commands[index]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}
    done = subprocess.run(["bash", "-c", "\n".join([*setup, command])], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == printed


# The heads block, over the log the fresh-machine line wrote once the tour has gone through it:
# its run and the two exports (the line's `datasets/demo-anyway` and the tour's `datasets/demo`).
HEADS = ("log verify --save-heads heads.jsonl", "log verify --check-heads heads.jsonl")


def test_the_readme_prints_what_saving_and_checking_heads_prints_after_the_tour(offline_run, tmp_path):
    """The block printed `1 export stream(s), 1402 events` and `saved 2 head(s)`, the log before
    the tour's own export, under a sentence saying 2 export streams, 1403 events and 3 heads."""
    log, summary = offline_run
    shutil.copy(log.path, tmp_path / "eviscene.duckdb")
    commands = _console_commands()
    # (the parser reads an export's indented counts as more of its command: its first line is all of it)
    exports = [command.split("\n")[0] for command, _ in commands if command.startswith("eviscene dataset export --run demo ")]
    assert len(exports) == 2
    setup = [command.replace("--run demo ", f"--run {summary.run_id} ") for command in exports]  # the fixture's run is not named demo
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}

    def printed_by(command: str) -> str:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.rstrip("\n")

    for command in setup:
        printed_by(command)
    for phrase in HEADS:
        command, printed = next((command, printed) for command, printed in commands if command == f"eviscene {phrase}")
        assert printed_by(command) == printed
