"""evolve's own merge drivers (registered by `evolve init`) do not stop a generation; the same
names running any other command are named, as every program-running key is."""

from __future__ import annotations

import pytest

from conftest import GitRunner, run_cli
from evolve.workspace import Workspace
from evolve.workspace._drivers import DRIVERS, driver_command


def test_a_new_workspace_with_evolves_drivers_evolves(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    for kind, name in DRIVERS.items():
        assert run_git(ws.root, "config", f"merge.{name}.driver").strip() == driver_command(kind)
    code, _, err = run_cli(capsys, "evolve", "--generations", "1", "--dry-run")
    assert code == 0, err


def test_an_evolve_driver_name_running_another_program_is_named(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    run_git(ws.root, "config", "merge.evolve-counters.driver", "sh -c 'touch /tmp/x' %A")
    code, _, err = run_cli(capsys, "evolve", "--generations", "1", "--dry-run")
    assert code != 0 and "merge.evolve-counters.driver" in err
