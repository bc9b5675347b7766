"""The one rule for a path an input names: it stays inside its root, symlinks included
(`eviscene.rules.paths`), checked over real files and links."""

import re

import pytest

from eviscene.rules.paths import PathEscapeError, resolve_inside


@pytest.fixture
def root(tmp_path):
    root = (tmp_path / "root").resolve()
    (root / "images").mkdir(parents=True)
    (root / "images" / "a.jpg").write_bytes(b"a")
    (tmp_path / "secret.txt").write_text("not the root's")
    (tmp_path / "elsewhere").mkdir()
    return root


def test_a_file_inside_and_a_link_that_stays_inside_resolve_to_the_file(root):
    (root / "images" / "alias.jpg").symlink_to("a.jpg")
    (root / "pictures").symlink_to(root / "images", target_is_directory=True)
    for relative in ("images/a.jpg", "images/alias.jpg", "pictures/a.jpg", "./images/a.jpg"):
        assert resolve_inside(root, relative, root_name="release root") == root / "images" / "a.jpg"


def test_a_link_out_of_the_root_is_refused_with_where_it_leads(root):
    secret = root.parent / "secret.txt"
    (root / "images" / "evil.jpg").symlink_to(secret)
    (root / "away").symlink_to(root.parent / "elsewhere", target_is_directory=True)
    with pytest.raises(PathEscapeError) as refused:
        resolve_inside(root, "images/evil.jpg", root_name="release root")
    assert str(refused.value) == f"path 'images/evil.jpg' resolves to {secret}, outside the release root {root}"
    with pytest.raises(PathEscapeError, match="resolves to .*elsewhere/x.jpg, outside the run directory"):
        resolve_inside(root, "away/x.jpg", root_name="run directory")


@pytest.mark.parametrize(
    ("relative", "message"),
    [
        ("/etc/passwd", "path '/etc/passwd' is absolute; it must be relative to the release root"),
        ("C:\\Windows\\win.ini", "is absolute"),
        ("images/../images/a.jpg", "contains '..'; it must stay inside the release root"),
        ("images\\..\\..\\secret.txt", "contains '..'"),
        ("", "path must be a non-empty string, got ''"),
        (None, "path must be a non-empty string, got None"),
        ("images/a\x00.jpg", "cannot be resolved"),
    ],
)
def test_a_path_that_could_leave_the_root_is_refused_before_it_is_resolved(root, relative, message):
    with pytest.raises(PathEscapeError, match=re.escape(message)):
        resolve_inside(root, relative, root_name="release root")


def test_a_symlink_loop_is_refused_not_followed_forever(root):
    (root / "loop").symlink_to("loop")
    with pytest.raises(PathEscapeError, match="path 'loop/x' cannot be resolved"):
        resolve_inside(root, "loop/x", root_name="release root")


def test_refusing_only_escapes_takes_dots_and_absolute_paths_that_resolve_inside_and_still_refuses_a_link_out(root):
    (root / "away").symlink_to(root.parent / "elsewhere", target_is_directory=True)
    for relative in ("images/../images/a.jpg", str(root / "images" / "a.jpg"), "images/./../images/a.jpg"):
        assert resolve_inside(root, relative, root_name="release root", refuse_only_escapes=True) == root / "images" / "a.jpg"
    assert resolve_inside(root, "images/..", root_name="release root", refuse_only_escapes=True) == root
    for relative, leads_to in (("../secret.txt", root.parent / "secret.txt"), ("/etc", "/etc"), ("images/../away", root.parent / "elsewhere")):
        with pytest.raises(PathEscapeError) as refused:
            resolve_inside(root, relative, root_name="release root", refuse_only_escapes=True)
        assert str(refused.value) == f"path {relative!r} resolves to {leads_to}, outside the release root {root}"
