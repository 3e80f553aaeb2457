"""Keys of a workspace's own git configuration that make git run a program are named before a
generation starts (issue 28, item 1): someone else's `.git/config` can set `core.fsmonitor`,
`core.hooksPath`, `core.sshCommand`, `diff.external`, a filter, a pager, a merge driver or a
signing program, each of which git runs on its own; the generation is refused in one
sentence naming the key unless the user passes `--trust-git-config`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conftest import one_sentence, run_cli, workspace_state
from evolve.gate import git_setup, setup_sentence
from evolve.generations import load_records
from evolve.workspace import Workspace

RunGit = Callable[..., str]

KEYS = [
    ("core.fsmonitor", "/tmp/evil-monitor", "core.fsmonitor"),
    ("core.fsmonitor", "true", "core.fsmonitor"),
    ("core.hooksPath", "memory/hooks", "core.hookspath"),
    ("core.sshCommand", "sh -c 'cat ~/.ssh/id_rsa' #", "core.sshcommand"),
    ("diff.external", "/tmp/evil-diff", "diff.external"),
    ("filter.evil.required", "true", "filter.evil.required"),
    ("filter.evil.process", "/tmp/evil-filter", "filter.evil.process"),
    ("core.pager", "/tmp/evil-pager", "core.pager"),
    ("pager.log", "/tmp/evil-pager", "pager.log"),
    ("merge.evil.driver", "/tmp/evil-merge %A", "merge.evil.driver"),
    ("gpg.program", "/tmp/evil-gpg", "gpg.program"),
    ("gpg.ssh.program", "/tmp/evil-gpg", "gpg.ssh.program"),
]


@pytest.mark.parametrize(("key", "value", "named"), KEYS, ids=[k[0] + "=" + k[1] for k in KEYS])
def test_a_config_key_that_runs_a_program_is_named(
    workspace: Workspace, run_git: RunGit, key: str, value: str, named: str
) -> None:
    protected = workspace.config.protected
    assert git_setup(workspace.store, "HEAD", protected) == []
    run_git(workspace.root, "config", key, value)

    found = git_setup(workspace.store, "HEAD", protected)
    sentence = setup_sentence(found)

    assert found == [f"{named} in the repository's configuration"]
    assert sentence.startswith("refusing to start a generation: ")
    assert named in sentence and "--trust-git-config" in sentence and "\n" not in sentence


@pytest.mark.parametrize(
    ("key", "value"), [("core.fsmonitor", "false"), ("pager.log", "false"), ("core.pager", "")]
)
def test_a_key_turned_off_is_not_named(
    workspace: Workspace, run_git: RunGit, key: str, value: str
) -> None:
    run_git(workspace.root, "config", key, value)
    assert git_setup(workspace.store, "HEAD", workspace.config.protected) == []


def test_the_user_configuration_is_not_named(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = workspace.root.parent / "user.gitconfig"
    user.write_text("[core]\n\tpager = less\n\tsshCommand = ssh -i key\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user))
    assert git_setup(workspace.store, "HEAD", workspace.config.protected) == []


def test_a_generation_under_core_fsmonitor_is_refused_in_one_sentence(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = ws.root.parent / "monitor-ran"
    monitor = ws.root.parent / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    monitor.chmod(0o755)
    run_git(ws.root, "config", "core.fsmonitor", str(monitor))
    before = workspace_state(ws.root, run_git)
    marker.unlink(missing_ok=True)

    code, _out, err = run_cli(capsys, "evolve", "--generations", "1")

    assert code != 0
    line = one_sentence(err)
    assert line.startswith("error: refusing to start a generation: ")
    assert "core.fsmonitor in the repository's configuration" in line
    assert workspace_state(ws.root, run_git) == before
    assert load_records(Workspace(ws.root)) == []
