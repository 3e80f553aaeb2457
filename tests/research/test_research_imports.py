"""scikit-learn loads only where topics or a pick are computed: never on the train, run or log
paths, nor for listing cards. Checked through `sys.modules` in fresh interpreters."""

from __future__ import annotations

import subprocess
import sys

from evolve.workspace import Workspace


def _loaded(root: str, argv: list[str]) -> set[str]:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        f"rc = main({['-C', root, *argv]!r})\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.rsplit("LOADED:", 1)[1].split())


def test_sklearn_loads_for_topics_only(workspace: Workspace) -> None:
    root = str(workspace.root)
    assert "sklearn" in _loaded(root, ["research", "topics", "--module", "memory", "--json"])
    for argv in (
        ["train", "--episodes", "2"],
        ["run", "--split", "dev", "--runs", "1"],
        ["log"],
        ["log", "--json"],
        ["research", "list"],
        ["research", "brief"],
    ):
        loaded = _loaded(root, argv)
        assert "sklearn" not in loaded and "numpy" not in loaded, argv
