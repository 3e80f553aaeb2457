"""`evolve memory` and `evolve show` with the workspace's secrets (issue 28, item 3): memory is
shown as the agent receives it, each configured secret as <redacted>, and a hand note or unit
that holds one is named on stderr and in --json (never the secret); by the fast path and by
the click command alike."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from evolve._format._units import hand_id
from evolve.cli import _fast
from evolve.workspace import Workspace

LISTED = "quokka-Vault-7713"
FROM_ENV = "wombat-Depot-5519"
NOTE = "memory/alex/hand-note.md"


@pytest.fixture
def planted(
    ws: Workspace, run_git: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> Workspace:
    config = ws.root / "evolve.yaml"
    config.write_text(
        config.read_text("utf-8") + f"redact:\n  values: [{LISTED}]\n  env: [PLANT_TOKEN]\n",
        "utf-8",
    )
    monkeypatch.setenv("PLANT_TOKEN", FROM_ENV)
    (ws.root / NOTE).parent.mkdir(parents=True, exist_ok=True)
    (ws.root / NOTE).write_text(f"The gate code is {LISTED}; the PIN {FROM_ENV}.\n", "utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "person: a note")
    return ws


def _run(argv: list[str], fast: bool, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    capsys.readouterr()
    if fast:
        assert _fast.run(argv) == 0  # the fast path answers
    else:
        from evolve.cli import cli

        with pytest.raises(SystemExit) as done:
            cli.main(argv, prog_name="evolve")
        assert done.value.code in (0, None)
    return capsys.readouterr()


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "click"])
def test_memory_hides_configured_secrets_and_names_the_file(
    planted: Workspace, capsys: pytest.CaptureFixture[str], fast: bool
) -> None:
    out, err = _run(["memory"], fast, capsys)
    assert LISTED not in out + err and FROM_ENV not in out + err
    assert "The gate code is <redacted>; the PIN <redacted>." in out
    assert f"note: {NOTE} holds a secret listed in redact: of evolve.yaml" in err
    out, _ = _run(["memory", "--json"], fast, capsys)
    doc = json.loads(out)
    assert doc["secrets_in"] == [NOTE] and "<redacted>" in doc["memory"]
    out, _ = _run(["memory", "--as-of", "HEAD"], fast, capsys)
    assert LISTED not in out and "<redacted>" in out


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "click"])
def test_show_hides_configured_secrets(
    planted: Workspace, capsys: pytest.CaptureFixture[str], fast: bool
) -> None:
    for argv in (["show", hand_id(NOTE)], ["show", hand_id(NOTE), "--json"]):
        out, err = _run(argv, fast, capsys)
        assert LISTED not in out + err and FROM_ENV not in out + err
        assert "<redacted>" in out


def test_memory_without_secrets_names_no_file(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = _run(["memory", "--json"], True, capsys)
    assert "secrets_in" not in json.loads(out) and "holds a secret" not in err
