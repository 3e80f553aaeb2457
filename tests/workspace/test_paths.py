"""Path confinement: syntax checks, symlinks, `.git`, protected prefixes and Unicode tricks."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.errors import PathRefused
from evolve.workspace import Workspace, is_under, normalize_relpath, resolve

# --- normalize_relpath ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("memory/a.md", "memory/a.md"),
        ("memory//a.md", "memory/a.md"),
        ("memory/a.md/", "memory/a.md"),
        ("prompts/system.md", "prompts/system.md"),
        ("memory/...", "memory/..."),
        ("memory/a~b", "memory/a~b"),
        ("memory/.gitkeep", "memory/.gitkeep"),
        ("memory/.github/x", "memory/.github/x"),
    ],
)
def test_normalize_accepts_ordinary_paths(raw: str, expected: str) -> None:
    assert normalize_relpath(raw) == PurePosixPath(expected)
    assert normalize_relpath(PurePosixPath(raw)) == PurePosixPath(expected)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("/etc/passwd", "relative to the workspace"),
        ("//server/share", "relative to the workspace"),
        ("~/x", "relative to the workspace"),
        ("~root/x", "relative to the workspace"),
        ("C:/x", "relative to the workspace"),
        ("c:x", "relative to the workspace"),
        ("..", "'..'"),
        ("../x", "'..'"),
        ("memory/../../x", "'..'"),
        ("memory/..", "'..'"),
        ("memory/\uff0e\uff0e/x", "'..'"),  # fullwidth full stops fold to '..'
        (".git", ".git"),
        (".git/config", ".git"),
        (".GIT/config", ".git"),
        (".Git/HEAD", ".git"),
        (".git./config", ".git"),
        (".git.../hooks/pre-commit", ".git"),
        ("memory/.git/x", ".git"),
        ("memory/.git", ".git"),
        (".git /x", ".git"),
        ("\uff0e\uff47\uff49\uff54/config", ".git"),  # fullwidth ".git"
        ("memory\\..\\x", "backslashes"),
        ("memory\\a.md", "backslashes"),
        ("memory/a\x00.md", "control characters"),
        ("memory/a\n.md", "control characters"),
        ("memory/a\x1b.md", "control characters"),
        ("memory/a\x7f.md", "control characters"),
        ("", "empty"),
        (" memory/a.md", "whitespace"),
        ("memory/a.md ", "whitespace"),
        (".", "root"),
        ("./", "root"),
    ],
)
def test_normalize_refuses(raw: str, why: str) -> None:
    with pytest.raises(PathRefused) as info:
        normalize_relpath(raw)
    assert why in str(info.value)
    assert "refusing path" in str(info.value)


def test_path_refused_is_a_permission_error() -> None:
    with pytest.raises(PermissionError):
        normalize_relpath("../x")


# --- resolve ---------------------------------------------------------------------------


def test_resolve_plain_path_stays_inside(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    assert resolve(tmp_path, "memory/a.md") == tmp_path.resolve() / "memory" / "a.md"
    # a path that does not exist yet (new folder) is fine
    assert resolve(tmp_path, "memory/new/b.md") == tmp_path.resolve() / "memory/new/b.md"


def test_resolve_through_a_symlinked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "memory").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert resolve(link, "memory/a.md") == real.resolve() / "memory" / "a.md"


def test_resolve_refuses_symlinked_file_pointing_outside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret", encoding="utf-8")
    (root / "memory" / "evil.md").symlink_to(outside)
    with pytest.raises(PathRefused, match="outside the workspace"):
        resolve(root, "memory/evil.md")


def test_resolve_refuses_dangling_symlink_pointing_outside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "evil.md").symlink_to(tmp_path / "not-yet-there.txt")
    with pytest.raises(PathRefused, match="outside the workspace"):
        resolve(root, "memory/evil.md")


def test_resolve_refuses_symlinked_parent_folder_pointing_outside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "memory" / "sub").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PathRefused, match="outside the workspace"):
        resolve(root, "memory/sub/new.md")


def test_resolve_refuses_relative_symlink_climbing_out(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "up").symlink_to("../..", target_is_directory=True)
    with pytest.raises(PathRefused, match="outside the workspace"):
        resolve(root, "memory/up/x.md")


def test_resolve_refuses_symlink_into_git_dir(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "memory").mkdir()
    (root / "memory" / "cfg").symlink_to("../.git/config")
    (root / "memory" / "hooks").symlink_to("../.git", target_is_directory=True)
    with pytest.raises(PathRefused, match=r"\.git"):
        resolve(root, "memory/cfg")
    with pytest.raises(PathRefused, match=r"\.git"):
        resolve(root, "memory/hooks/pre-commit")


def test_resolve_accepts_symlink_that_stays_inside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "memory" / "real").mkdir(parents=True)
    (root / "memory" / "alias").symlink_to("real", target_is_directory=True)
    assert resolve(root, "memory/alias/a.md") == root.resolve() / "memory/real/a.md"


def test_resolve_applies_the_syntax_checks(tmp_path: Path) -> None:
    for bad in ("../x", "/tmp/x", ".git/config", "a\\b"):
        with pytest.raises(PathRefused):
            resolve(tmp_path, bad)


# --- is_under ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "prefix", "expected"),
    [
        ("tests/x.py", "tests/", True),
        ("tests", "tests/", True),
        ("tests/deep/x.py", "tests", True),
        ("testsuite/x.py", "tests/", False),
        ("memory/tests/x.py", "tests/", False),
        ("TESTS/x", "tests/", True),
        ("Tests/x", "tests/", True),
        ("\uff54\uff45\uff53\uff54\uff53/x", "tests/", True),  # fullwidth "tests"
        ("evolve.yaml", "evolve.yaml", True),
        ("EVOLVE.YAML", "evolve.yaml", True),
        ("evolve.yaml.bak", "evolve.yaml", False),
        ("evalset/splits.yaml", "evalset/", True),
        ("eval/x", "evalset/", False),
    ],
)
def test_is_under(path: str, prefix: str, expected: bool) -> None:
    assert is_under(PurePosixPath(path), prefix) is expected


# --- Workspace.is_protected / check_writable ----------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "tests/health/test_workspace_health.py",
        "tests/new_probe.py",
        "TESTS/x",
        "\uff54\uff45\uff53\uff54\uff53/x",
        "evalset/splits.yaml",
        "EvalSet/personas/alex.yaml",
        "evolve.yaml",
        "Evolve.YAML",
        "\uff45\uff56\uff4f\uff4c\uff56\uff45\uff0e\uff59\uff41\uff4d\uff4c",  # fullwidth
        ".gitignore",
        ".GITIGNORE",
    ],
)
def test_protected_paths(workspace: Workspace, path: str) -> None:
    assert workspace.is_protected(path)
    with pytest.raises(PathRefused, match="protected"):
        workspace.check_writable(path, ("memory/", "prompts/", "tests/", "evalset/", "evolve.yaml"))


@pytest.mark.parametrize("path", ["memory/a.md", "prompts/system.md", "generations/x.json"])
def test_unprotected_paths(workspace: Workspace, path: str) -> None:
    assert not workspace.is_protected(path)


def test_check_writable_returns_the_resolved_path(workspace: Workspace) -> None:
    assert workspace.check_writable("memory/alex/u1.md", ("memory/",)) == (
        workspace.root / "memory" / "alex" / "u1.md"
    )


def test_check_writable_refuses_outside_the_allowed_prefixes(workspace: Workspace) -> None:
    with pytest.raises(PathRefused, match="only memory/ may be changed"):
        workspace.check_writable("prompts/system.md", ("memory/",))
    with pytest.raises(PathRefused):
        workspace.check_writable("memoryx/a.md", ("memory/",))


def test_check_writable_refuses_escapes(workspace: Workspace) -> None:
    for bad in ("memory/../tests/x.py", "/etc/passwd", ".git/config", "memory/.GIT/x"):
        with pytest.raises(PathRefused):
            workspace.check_writable(bad, ("memory/",))


def test_check_writable_refuses_symlink_out_of_the_workspace(
    workspace: Workspace, tmp_path: Path
) -> None:
    target = tmp_path / "outside.md"
    (workspace.root / "memory" / "out.md").symlink_to(target)
    with pytest.raises(PathRefused, match="outside the workspace"):
        workspace.check_writable("memory/out.md", ("memory/",))
    assert not target.exists()


def test_check_writable_refuses_symlink_to_a_protected_file(workspace: Workspace) -> None:
    (workspace.root / "memory" / "evil.md").symlink_to(os.path.join("..", "evolve.yaml"))
    with pytest.raises(PathRefused):
        workspace.check_writable("memory/evil.md", ("memory/",))


def test_check_writable_allow_list_is_not_folded(workspace: Workspace) -> None:
    with pytest.raises(PathRefused):
        workspace.check_writable("\uff4d\uff45\uff4d\uff4f\uff52\uff59/x.md", ("memory/",))


# --- properties -------------------------------------------------------------------------

_SAFE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
_segment = st.text(alphabet=_SAFE_CHARS + ".", min_size=1, max_size=12).filter(
    lambda s: not s.startswith(".")
)
_segments = st.lists(_segment, min_size=1, max_size=6)


@pytest.fixture(scope="module")
def prop_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prop-root")
    (root / "memory").mkdir()
    return root


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(parts=_segments)
def test_safe_paths_resolve_inside_the_root(prop_root: Path, parts: list[str]) -> None:
    raw = "/".join(parts)
    full = resolve(prop_root, raw)
    assert full.is_relative_to(prop_root.resolve())
    assert full.relative_to(prop_root.resolve()).as_posix() == raw
    assert normalize_relpath(raw).parts == tuple(parts)


@settings(max_examples=200, deadline=None)
@given(parts=_segments, at=st.integers(min_value=0, max_value=6), sep=st.sampled_from(["/", "//"]))
def test_any_dotdot_segment_is_refused(parts: list[str], at: int, sep: str) -> None:
    parts = list(parts)
    parts.insert(min(at, len(parts)), "..")
    raw = sep.join(parts)
    with pytest.raises(PathRefused, match=r"'\.\.'"):
        normalize_relpath(raw)


_git_variant = st.tuples(
    st.lists(st.booleans(), min_size=3, max_size=3),
    st.text(alphabet=". ", max_size=3),
).map(
    lambda t: (
        "."
        + "".join(c.upper() if up else c for c, up in zip("git", t[0], strict=True))
        + t[1].rstrip(" ")
    )
)


@settings(max_examples=200, deadline=None)
@given(parts=_segments, at=st.integers(min_value=0, max_value=6), git=_git_variant)
def test_any_git_segment_is_refused(parts: list[str], at: int, git: str) -> None:
    parts = list(parts)
    parts.insert(min(at, len(parts)), git)
    with pytest.raises(PathRefused, match=r"\.git"):
        normalize_relpath("/".join(parts))


@settings(max_examples=100, deadline=None)
@given(
    flips=st.lists(st.booleans(), min_size=5, max_size=5),
    rest=_segments,
)
def test_case_variants_of_tests_are_protected(flips: list[bool], rest: list[str]) -> None:
    name = "".join(c.upper() if up else c for c, up in zip("tests", flips, strict=True))
    path = PurePosixPath(name, *rest)
    assert is_under(path, "tests/")
