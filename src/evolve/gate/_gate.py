"""The gate: a mechanical accept rule that the evolving side cannot reach.

It imports no proposer. Its decision reads only the evidence below: the protected-file hashes,
the workspace tests' result, the paired dev gain and the constraints. The holdout score is
never part of the evidence: it is recorded beside dev by the loop and cannot influence this
function.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evolve._faults import fault
from evolve.gate._tempdirs import temp_copy
from evolve.stats import PairedGain
from evolve.store import GitStore


@dataclass(frozen=True)
class GateEvidence:
    base_protected_hash: str
    candidate_protected_hash: str
    protected_dirty: tuple[str, ...]
    tests_passed: bool
    tests_output: str
    dev_gain: PairedGain
    min_gain: float
    prompt_chars: int
    max_prompt_chars: int
    base_tokens: float
    candidate_tokens: float
    max_token_factor: float
    changed: bool
    # Why the protected files or the scored tree cannot be trusted, found by the loop's checks
    # before and after scoring (see `protected_state`); None when every check agreed.
    protected_problem: str | None = None
    # The tree that was scored and the candidate's tree: the gate accepts only the tree it saw.
    scored_tree: str = ""
    candidate_tree: str = ""
    # US dollars per dev episode (mean, at the prices in evolve.yaml; a cached reply costs 0)
    # and the cap `gate.max_cost` (None: no cap).
    base_cost: float = 0.0
    candidate_cost: float = 0.0
    max_cost: float | None = None


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    reason: str


def prompt_sizes(store: GitStore, commit: str) -> dict[str, int]:
    """Characters of each Markdown prompt file in `commit` (what `gate.max_prompt_chars` caps)."""
    entries = store.committed_entries(commit, ["prompts"])
    blobs = store.read_blobs(oid for mode, oid in entries.values() if mode != "160000")
    files = {path: blobs[oid] for path, (mode, oid) in entries.items() if oid in blobs}
    return {
        path: len(data.decode("utf-8", "replace"))
        for path, data in sorted(files.items())
        if path.endswith(".md")
    }


class Gate:
    """Accept only if every condition holds; the first failing one is the reason."""

    def decide(self, e: GateEvidence) -> Verdict:
        if e.protected_problem:
            return Verdict(False, e.protected_problem)
        if e.scored_tree != e.candidate_tree:
            return Verdict(
                False,
                f"the scored tree {e.scored_tree[:10]} is not the candidate's tree "
                f"{e.candidate_tree[:10]}",
            )
        if e.base_protected_hash != e.candidate_protected_hash or e.protected_dirty:
            what = ", ".join(e.protected_dirty) if e.protected_dirty else "a committed change"
            return Verdict(False, f"protected files changed during the generation ({what})")
        if not e.changed:
            return Verdict(False, "the generation changed nothing")
        if not e.tests_passed:
            lines = e.tests_output.strip().splitlines()
            return Verdict(False, "workspace tests failed" + (f": {lines[-1]}" if lines else ""))
        g = e.dev_gain
        interval = f"dev gain {g.mean:+.3f} [{g.low:+.3f}, {g.high:+.3f}]"
        if g.low <= e.min_gain:
            return Verdict(
                False,
                f"score did not improve: {interval}; the lower bound must exceed {e.min_gain:+.3f}",
            )
        if e.prompt_chars > e.max_prompt_chars:
            return Verdict(
                False, f"prompt size {e.prompt_chars} exceeds the cap {e.max_prompt_chars}"
            )
        if e.base_tokens > 0 and e.candidate_tokens > e.max_token_factor * e.base_tokens:
            return Verdict(
                False,
                f"tokens per episode {e.candidate_tokens:.0f} exceed {e.max_token_factor:g}x the base "
                f"({e.base_tokens:.0f})",
            )
        if e.max_cost is not None and e.candidate_cost > e.max_cost:
            return Verdict(
                False,
                f"cost per dev episode ${e.candidate_cost:.6f} exceeds gate.max_cost "
                f"${e.max_cost:.6f} (the base: ${e.base_cost:.6f})",
            )
        return Verdict(True, f"accepted: {interval}")

    def cannot_judge(self, problem: str) -> Verdict:
        """The verdict on a generation whose base fails the protected-file checks (nothing
        ran, so there is no evidence to decide on)."""
        return Verdict(False, f"the generation cannot be judged: {problem}")

    def confirm(self, verdict: Verdict, late_problem: str | None) -> Verdict:
        """The verdict as it is applied: an acceptance stands only if the workspace is still
        exactly what was judged (`late_problem` None)."""
        if verdict.accepted and late_problem is not None:
            return Verdict(False, late_problem)
        return verdict


_PRICED_PREFIXES = ("openai/", "anthropic/")


def cost_cap_problem(max_cost: float | None, model: str, priced: bool) -> str | None:
    """Why `gate.max_cost` cannot be checked for the agent `model` (None when it can): an
    HTTP model with no price in evolve.yaml would always cost $0 and pass any cap."""
    if max_cost is None or priced or not model.strip().startswith(_PRICED_PREFIXES):
        return None
    return (
        f"gate.max_cost is set, but evolve.yaml lists no price for the agent model {model}, "
        "so its cost cannot be checked; add it under prices: (dollars per million input and "
        "output tokens) or remove gate.max_cost."
    )


EVOLVABLE_DIRS = ("memory", "prompts")
TESTS_TIMEOUT = 600


@dataclass(frozen=True)
class WorkspaceTestsRun:
    """The workspace tests' result, and the protected files the copy they ran in held
    (path -> blob id, hashed in the copy before pytest started)."""

    passed: bool
    output: str
    loaded: Mapping[str, str] = field(default_factory=dict)


def run_workspace_tests(
    store: GitStore, base: str, candidate: str, protected: tuple[str, ...]
) -> tuple[bool, str]:
    """Run the workspace's `tests/` as they were at `base`, against the candidate's memory
    (see :func:`workspace_tests`): (passed, output). A copy whose protected files are not
    the blobs committed at `base` fails, with a line naming them."""
    run = workspace_tests(store, base, candidate, protected)
    committed = {
        path: oid
        for path, (mode, oid) in store.committed_entries(base, protected).items()
        if mode != "160000"
    }
    differ = sorted(
        p for p in set(committed) | set(run.loaded) if committed.get(p) != run.loaded.get(p)
    )
    if differ:
        shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        return False, (
            f"{run.output}\nthe workspace tests' copy of {base[:10]} did not hold the protected "
            f"files committed there ({shown})"
        )
    return run.passed, run.output


def workspace_tests(
    store: GitStore, base: str, candidate: str, protected: tuple[str, ...]
) -> WorkspaceTestsRun:
    """Run the workspace's `tests/` as they were at `base`, against the candidate's memory.

    The folder is the base's tree with only the evolvable folders (`memory/`, `prompts/`)
    taken from the candidate, so nothing else a generation adds (a root `conftest.py`, a
    `pytest.py`, a config file) can reach the tests; pytest runs isolated from the folder's
    own `sys.path` entry and from any pytest configuration but the base's. Both trees are
    exported as committed (no replace ref, attribute or filter: `GitStore.export_committed`),
    and the protected files the copy holds are hashed before pytest starts (`loaded`).
    """
    with temp_copy("gate") as tmp:
        root = tmp / "ws"
        root.mkdir()
        _export(store, base, root, None)
        for folder in EVOLVABLE_DIRS:
            shutil.rmtree(root / folder, ignore_errors=True)
        _export(store, candidate, root, list(EVOLVABLE_DIRS))
        fault("tests")
        loaded = store.exported_ids(root, protected)
        if not (root / "tests").is_dir():
            return WorkspaceTestsRun(True, "no workspace tests", loaded)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "--rootdir", str(root), "tests"],
                cwd=root, capture_output=True, text=True, timeout=TESTS_TIMEOUT, env=env,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return WorkspaceTestsRun(
                False, f"the workspace tests ran past {TESTS_TIMEOUT} seconds", loaded
            )
        output = (proc.stdout + proc.stderr)[-4000:]
        return WorkspaceTestsRun(proc.returncode == 0, output, loaded)


def export_tree(store: GitStore, rev: str, root: Path) -> None:
    """Write every file of `rev` into the empty folder `root` (a copy to score), exactly as
    committed (`GitStore.export_committed`)."""
    _export(store, rev, root, None)


def _export(store: GitStore, rev: str, root: Path, paths: list[str] | None) -> None:
    """Write the files of `rev` (optionally only under `paths`) into `root`, as committed."""
    store.export_committed(rev, root, paths)
