"""A configured secret never enters a file the applier writes (issue 28, item 3): a unit or
a whole file (a prompt, a restored hand note) that holds one is refused, in one sentence that
names the file and never the secret."""

from __future__ import annotations

import pytest

from evolve.applier import MemoryApplier, Op, write_files
from evolve.errors import PathRefused
from evolve.memory import load_units
from evolve.workspace import Workspace
from factories import memory_unit

LISTED = "quokka-Vault-7713"
FROM_ENV = "wombat-Depot-5519"


@pytest.fixture
def secret_ws(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    config = workspace.root / "evolve.yaml"
    config.write_text(
        config.read_text("utf-8") + f"redact:\n  values: [{LISTED}]\n  env: [PLANT_TOKEN]\n",
        "utf-8",
    )
    monkeypatch.setenv("PLANT_TOKEN", FROM_ENV)
    return Workspace(workspace.root)


@pytest.mark.parametrize("secret", [LISTED, FROM_ENV])
def test_a_unit_holding_a_configured_secret_is_refused_naming_its_file(
    secret_ws: Workspace, secret: str
) -> None:
    ops = [
        Op(
            op="add", unit=memory_unit("ace-a", f"Use the code {secret} to pay.", created_episode=0)
        ),
        Op(op="add", unit=memory_unit("ace-b", "Ask before paying publicly.", created_episode=0)),
    ]
    applier = MemoryApplier(secret_ws, "user:alex")
    result = applier.apply(ops, load_units(secret_ws.root))
    applier.done()
    assert [op.id for op in result.applied] == ["ace-b"]
    (refused,) = result.refused
    assert refused.reason.startswith("memory/alex/ace-a.md holds a secret listed in redact:")
    assert secret not in refused.reason and secret not in refused.what
    assert not (secret_ws.root / "memory/alex/ace-a.md").exists()


def test_a_whole_file_holding_a_configured_secret_is_refused_before_anything_is_written(
    secret_ws: Workspace,
) -> None:
    changes = {
        "prompts/system.md": b"You are helpful.\n",
        "memory/alex/note.md": f"The gate code is {LISTED}.\n".encode(),
    }
    before = (secret_ws.root / "prompts/system.md").read_bytes()
    with pytest.raises(PathRefused) as caught:
        write_files(secret_ws, changes)
    message = str(caught.value)
    assert message.startswith("refusing to write memory/alex/note.md: it holds a secret")
    assert LISTED not in message and message.endswith(".")
    assert (secret_ws.root / "prompts/system.md").read_bytes() == before
    assert not (secret_ws.root / "memory/alex/note.md").exists()


def test_without_a_configured_secret_the_same_files_are_written(workspace: Workspace) -> None:
    assert write_files(workspace, {"memory/alex/note.md": f"code {LISTED}\n".encode()}) == [
        "memory/alex/note.md"
    ]
