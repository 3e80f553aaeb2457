"""The gate's accept rule, and the workspace tests it runs against the base's protected files."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

import evolve._faults
import evolve.gate
import evolve.stats
from evolve.gate import Gate, GateEvidence, PairedGain, Verdict, run_workspace_tests
from evolve.workspace import Workspace

RunGit = Callable[..., str]

H = "a" * 64


def _evidence(**changes: object) -> GateEvidence:
    """Evidence that the gate accepts; each test breaks one condition."""
    good = GateEvidence(
        base_protected_hash=H,
        candidate_protected_hash=H,
        protected_dirty=(),
        tests_passed=True,
        tests_output="4 passed in 0.50s\n",
        dev_gain=PairedGain(mean=0.4, low=0.2, high=0.6, tasks=20, pairs=60),
        min_gain=0.0,
        prompt_chars=1000,
        max_prompt_chars=6000,
        base_tokens=3000.0,
        candidate_tokens=3300.0,
        max_token_factor=1.5,
        changed=True,
    )
    return dataclasses.replace(good, **changes)  # type: ignore[arg-type]


def test_good_evidence_is_accepted_with_the_interval() -> None:
    verdict = Gate().decide(_evidence())
    assert verdict == Verdict(True, "accepted: dev gain +0.400 [+0.200, +0.600]")


def test_an_unchanged_generation_is_rejected() -> None:
    verdict = Gate().decide(_evidence(changed=False))
    assert not verdict.accepted
    assert "changed nothing" in verdict.reason


def test_a_committed_change_to_protected_files_is_rejected() -> None:
    verdict = Gate().decide(_evidence(candidate_protected_hash="b" * 64))
    assert not verdict.accepted
    assert verdict.reason.startswith("protected files changed")


def test_an_uncommitted_change_to_protected_files_is_rejected_naming_them() -> None:
    verdict = Gate().decide(_evidence(protected_dirty=("evalset/splits.yaml", "tests/x.py")))
    assert not verdict.accepted
    assert "protected files changed" in verdict.reason
    assert "evalset/splits.yaml" in verdict.reason and "tests/x.py" in verdict.reason


def test_failing_workspace_tests_reject_even_a_large_gain() -> None:
    e = _evidence(
        tests_passed=False,
        tests_output="F...\nFAILED tests/health/test_x.py::test_x\n1 failed, 3 passed in 0.9s\n",
        dev_gain=PairedGain(mean=0.9, low=0.8, high=1.0, tasks=20, pairs=60),
    )
    verdict = Gate().decide(e)
    assert not verdict.accepted
    assert verdict.reason == "workspace tests failed: 1 failed, 3 passed in 0.9s"


def test_a_flat_score_is_rejected() -> None:
    verdict = Gate().decide(_evidence(dev_gain=PairedGain(0.0, 0.0, 0.0, 20, 60)))
    assert not verdict.accepted
    assert "did not improve" in verdict.reason
    assert "[+0.000, +0.000]" in verdict.reason


def test_a_positive_mean_whose_interval_reaches_zero_is_rejected() -> None:
    # Not a bare `>`: the mean went up, but the lower bound of the interval did not.
    verdict = Gate().decide(_evidence(dev_gain=PairedGain(0.05, 0.0, 0.15, 20, 20)))
    assert not verdict.accepted
    assert "did not improve" in verdict.reason


def test_min_gain_raises_the_bar() -> None:
    e = _evidence(dev_gain=PairedGain(0.2, 0.1, 0.3, 20, 60), min_gain=0.1)
    assert not Gate().decide(e).accepted
    assert Gate().decide(dataclasses.replace(e, min_gain=0.09)).accepted


def test_a_prompt_over_the_cap_is_rejected() -> None:
    verdict = Gate().decide(_evidence(prompt_chars=6001))
    assert not verdict.accepted
    assert verdict.reason == "prompt size 6001 exceeds the cap 6000"
    assert Gate().decide(_evidence(prompt_chars=6000)).accepted


def test_tokens_per_episode_above_the_factor_are_rejected() -> None:
    verdict = Gate().decide(_evidence(base_tokens=3000.0, candidate_tokens=4501.0))
    assert not verdict.accepted
    assert "tokens per episode 4501 exceed 1.5x the base (3000)" in verdict.reason
    assert Gate().decide(_evidence(base_tokens=3000.0, candidate_tokens=4500.0)).accepted


def test_the_evidence_holds_no_holdout_score() -> None:
    names = {f.name for f in dataclasses.fields(GateEvidence)}
    assert not [n for n in names if "holdout" in n.lower() or "hold" in n.lower()]
    assert "dev_gain" in names


def _evolve_imports(folder: Path) -> set[str]:
    """The evolve modules the files of `folder` import (function-local imports too)."""
    imported: set[str] = set()
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    return {m for m in imported if m.split(".")[0] == "evolve"}


def test_the_gate_package_imports_no_proposer() -> None:
    """The gate reaches only the store, the statistics (standard library only), the standard
    library and the fault seam (which reads one environment variable): no reflector, applier,
    updater, model or loop code it could be steered through."""
    ours = _evolve_imports(Path(evolve.gate.__file__).parent)
    assert ours, "the scan found the gate's own imports"
    allowed = ("evolve.gate", "evolve.store", "evolve.stats")
    # evolve._lazy: the package's names load on first use (standard library only);
    # evolve.workspace._drivers: the commands of evolve's own merge drivers, which the set-up
    # check does not name (names and strings only: it runs nothing for the gate)
    # evolve._signals: a cleanup step defers signals (standard library only)
    others = ("evolve._faults", "evolve._lazy", "evolve._signals", "evolve.workspace._drivers")
    assert all(m.startswith(allowed) or m in others for m in ours), ours
    stats = _evolve_imports(Path(evolve.stats.__file__).parent)
    assert stats and all(m.startswith("evolve.stats") for m in stats)
    fault_imports = ast.parse(Path(evolve._faults.__file__).read_text(encoding="utf-8"))
    assert not [
        n
        for n in ast.walk(fault_imports)
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("evolve")
    ]


# --- run_workspace_tests ------------------------------------------------------------------

GUARD = """\
from pathlib import Path


def test_no_marker_prompt() -> None:
    root = Path(__file__).resolve().parents[2]
    assert not (root / "prompts" / "marker.md").exists(), "the marker prompt is present"
"""


def _commit_all(root: Path, run_git: RunGit, message: str) -> str:
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", message)
    return run_git(root, "rev-parse", "HEAD").strip()


def _protected(ws: Workspace) -> tuple[str, ...]:
    return tuple(ws.config.protected)


@pytest.mark.slow
def test_a_candidate_cannot_delete_the_test_that_judges_it(
    workspace: Workspace, run_git: RunGit
) -> None:
    root = workspace.root
    (root / "tests" / "health" / "test_guard.py").write_text(GUARD, encoding="utf-8")
    base = _commit_all(root, run_git, "base: a guard test")
    # Behind the applier's back: add what the guard forbids and delete the guard.
    (root / "prompts" / "marker.md").write_text("marker\n", encoding="utf-8")
    (root / "tests" / "health" / "test_guard.py").unlink()
    candidate = _commit_all(root, run_git, "candidate: weaken the tests")
    assert (
        run_git(root, "ls-tree", "-r", "--name-only", candidate, "tests").count("test_guard") == 0
    )

    passed, output = run_workspace_tests(workspace.store, base, candidate, _protected(workspace))

    assert not passed
    # The base's copy of the test ran, against the candidate's prompts.
    assert "test_no_marker_prompt" in output
    assert "the marker prompt is present" in output


@pytest.mark.slow
def test_a_candidate_cannot_break_its_protected_files_to_fail_the_base_tests(
    workspace: Workspace, run_git: RunGit
) -> None:
    """The other direction: the candidate's copies of protected files are not the ones used."""
    root = workspace.root
    base = run_git(root, "rev-parse", "HEAD").strip()
    (root / "tests" / "health" / "test_workspace_health.py").write_text(
        "def test_broken() -> None:\n    raise AssertionError('candidate copy ran')\n",
        encoding="utf-8",
    )
    (root / "evolve.yaml").write_text("version: 1\nnot_a_key: true\n", encoding="utf-8")
    candidate = _commit_all(root, run_git, "candidate: edit protected files")

    passed, output = run_workspace_tests(workspace.store, base, candidate, _protected(workspace))

    assert passed, output
    assert "candidate copy ran" not in output
    assert "4 passed" in output


def test_a_base_without_tests_passes_vacuously(workspace: Workspace, run_git: RunGit) -> None:
    root = workspace.root
    run_git(root, "rm", "-r", "-q", "tests")
    base = _commit_all(root, run_git, "no tests")
    assert run_workspace_tests(workspace.store, base, base, _protected(workspace)) == (
        True,
        "no workspace tests",
    )


FAILING = "def test_fail() -> None:\n    raise AssertionError('base says no')\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("pytest.py", "raise SystemExit(0)\n"),
        ("pytest.ini", "[pytest]\naddopts = --deselect tests/health/test_fail.py::test_fail\n"),
        (
            "conftest.py",
            "def pytest_collection_modifyitems(items):\n"
            "    items[:] = [i for i in items if i.name != 'test_fail']\n",
        ),
    ],
    ids=["pytest.py", "pytest.ini", "conftest.py"],
)
def test_an_unprotected_root_file_cannot_silence_the_base_tests(
    workspace: Workspace, run_git: RunGit, name: str, content: str
) -> None:
    root = workspace.root
    (root / "tests" / "health" / "test_fail.py").write_text(FAILING, encoding="utf-8")
    base = _commit_all(root, run_git, "base: a failing test")
    (root / name).write_text(content, encoding="utf-8")
    candidate = _commit_all(root, run_git, f"candidate: add {name}")

    passed, output = run_workspace_tests(workspace.store, base, candidate, _protected(workspace))

    assert not passed
    assert "base says no" in output
