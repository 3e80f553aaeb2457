"""A writer imports what it runs: `evolve train --json` prints JSON, so it loads no rich (the
progress bar draws nothing on a stderr that is no terminal). Checked through `sys.modules` in
a fresh interpreter, not by timing, so the test is deterministic."""

from __future__ import annotations

import os
import subprocess
import sys

from evolve.workspace import Workspace


def test_train_json_imports_no_rich(workspace: Workspace) -> None:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        "rc = main(['train', '--episodes', '1', '--json'])\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=workspace.root, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.rsplit("LOADED:", 1)[1].split()
    assert "evolve.train" in loaded  # it did train
    assert not [m for m in loaded if m == "rich" or m.startswith("rich.")]
    assert done.stderr == ""  # no bar, and no empty line, on a stderr that is no terminal


# What one plain `evolve train --episodes 1 --json` must not load (issue 21, item 7: a writer
# imports what it runs). Each entry names the cut that keeps it out.
NOT_LOADED = {
    # txn's recovery loads the generation code only when a generation journal exists, and
    # sweeps the gate's temporary copies without loading the gate's checks
    "evolve.txn._generation": "recovery without a generation journal",
    "evolve.gate._gate": "the gate's checks (recovery only sweeps its copies)",
    # the skills batch writer and the skill library's batch plan load for a skills run only;
    # marking ops pending loads review's helper, not the review commands
    "evolve.train._batch": "the skills batch writer (recipe tepa)",
    "evolve.skills._batch": "the skills batch plan (recipe tepa)",
    "evolve.skills._plan": "the skills batch plan (recipe tepa)",
    "evolve.review._review": "the review commands (train only marks ops pending)",
}


def _loaded_by_train(workspace: Workspace) -> list[str]:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        "rc = main(['train', '--episodes', '1', '--json'])\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=workspace.root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rsplit("LOADED:", 1)[1].split()


def test_train_loads_only_what_it_runs(workspace: Workspace) -> None:
    loaded = _loaded_by_train(workspace)
    assert "evolve.train" in loaded  # it did train
    extra = {
        name: why
        for name, why in NOT_LOADED.items()
        if any(m == name or m.startswith(name + ".") for m in loaded)
    }
    assert not extra, extra
