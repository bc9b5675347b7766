"""A runtime cache folder stays bounded: an entry (a file, a folder of them, a crashed
writer's leftover) that nobody wrote or read for `UNUSED_DAYS` is removed; a newer one, or
an old one marked used, is kept; and a folder is listed once per process."""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path

import pytest

from eviscene.rules.runtime import UNUSED_DAYS, mark_used, prune_unused, runtime_dir

DAY = 86_400


def _age(path, days: float) -> None:
    when = time.time() - days * DAY
    os.utime(path, (when, when))


def test_entries_unused_for_the_limit_are_removed_and_the_rest_kept(tmp_path):
    assert UNUSED_DAYS == 14
    stale_file, fresh_file = tmp_path / "old.npz", tmp_path / "new.npz"
    stale_folder, fresh_folder = tmp_path / "old.answers", tmp_path / "new.answers"
    leftover, read_lately = tmp_path / ".old.npz.abc.tmp", tmp_path / "read.json"
    for folder in (stale_folder, fresh_folder):
        (folder / "code").mkdir(parents=True)
        (folder / "code" / "answer.json").write_text("{}")
    for path in (stale_file, fresh_file, leftover, read_lately):
        path.write_text("x")
    for path, days in ((stale_file, 15), (stale_folder, 15), (leftover, 30), (read_lately, 20), (fresh_file, 13), (fresh_folder, 1)):
        _age(path, days)
    mark_used(read_lately)  # read just now: in use, whatever its age
    mark_used(tmp_path / "gone.json")  # nothing there: no error

    prune_unused(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.answers", "new.npz", "read.json"]
    assert (fresh_folder / "code" / "answer.json").read_text() == "{}"


def test_a_folder_is_pruned_once_per_process(tmp_path):
    prune_unused(tmp_path)
    stale = tmp_path / "old.json"
    stale.write_text("x")
    _age(stale, 20)
    prune_unused(tmp_path)  # listed already: a later write does not list the folder again
    assert stale.exists()
    prune_unused(tmp_path / "missing")  # no folder: nothing to do


def _default_runtime_dir_in(monkeypatch, temp) -> Path:
    """The runtime directory as it is chosen with no configuration, in `temp`."""
    monkeypatch.delenv("EVISCENE_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(temp))
    return temp / f"eviscene-{os.getuid()}"


def test_the_runtime_directory_is_made_private_and_used(monkeypatch, tmp_path, capsys):
    expected = _default_runtime_dir_in(monkeypatch, tmp_path)
    assert runtime_dir() == expected and stat.S_IMODE(expected.stat().st_mode) & 0o022 == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("plant", ["a link to the planter's folder", "a folder others may write"])
def test_a_runtime_directory_another_user_could_have_planted_is_not_used(plant, monkeypatch, tmp_path, capsys):
    """On a shared machine `<tmp>/eviscene-<uid>` is a name anyone can take first, and whoever
    may write it feeds this user's runs cached search answers: this process keeps a private
    folder instead, and says so."""
    expected = _default_runtime_dir_in(monkeypatch, tmp_path)
    planted = tmp_path / "planted"
    planted.mkdir()
    if plant.startswith("a link"):
        expected.symlink_to(planted)
    else:
        expected.mkdir()
        expected.chmod(0o777)
    chosen = runtime_dir()
    assert chosen != expected and chosen.parent != planted
    assert stat.S_IMODE(chosen.stat().st_mode) == 0o700 and chosen.stat().st_uid == os.geteuid()
    assert runtime_dir() == chosen  # one private folder for the process
    err = capsys.readouterr().err
    assert err.startswith(f"eviscene: not using the runtime directory {expected}: {expected} is not a private folder of this user's;")
    assert err.count("\n") == 1 and "EVISCENE_RUNTIME_DIR" in err
