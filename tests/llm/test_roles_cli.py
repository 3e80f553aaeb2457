"""Every role on any endpoint: flag > environment > evolve.yaml, on run, train and evolve."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from conftest import GitRunner, one_sentence, run_cli
from evolve.errors import ModelError
from evolve.llm import _roles, make_llm, make_role_llm, with_models
from evolve.llm._openai import OpenAIChat
from evolve.llm._redacting import RedactingLLM
from evolve.workspace import Workspace

ENV = ("EVOLVE_MODEL", "EVOLVE_UPDATER_MODEL", "EVOLVE_REFLECTOR_MODEL", "EVOLVE_CACHE")


class Recorder:
    """Records the model name each role is built with; stops the command after `limit`."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.limit = 1

    def __call__(self, name: str, *, env: Any = None, **options: Any) -> Any:
        self.names.append(name)
        if len(self.names) == self.limit:
            raise ModelError(f"stopped after building {self.limit} roles.")
        return REAL_MAKE_LLM("sim", env=env)


REAL_MAKE_LLM = make_llm


@pytest.fixture
def asked(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> Recorder:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    recorder = Recorder()
    monkeypatch.setattr(_roles, "make_llm", recorder)
    return recorder


def set_yaml_models(ws: Workspace, run_git: GitRunner, **models: str) -> None:
    path = ws.root / "evolve.yaml"
    data = yaml.safe_load(path.read_text())
    data["models"].update(models)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    run_git(ws.root, "commit", "-qam", "models")


@pytest.fixture
def layered(
    asked: Recorder, ws: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_yaml_models(ws, run_git, agent="y-agent", updater="y-updater", reflector="y-reflector")
    monkeypatch.setenv("EVOLVE_UPDATER_MODEL", "e-updater")
    monkeypatch.setenv("EVOLVE_REFLECTOR_MODEL", "e-reflector")


@pytest.mark.usefixtures("layered")
@pytest.mark.parametrize(
    ("argv", "roles", "expected"),
    [
        (["run", "--split", "dev"], 1, ["y-agent"]),
        (["run", "--split", "dev", "--model", "f-agent"], 1, ["f-agent"]),
        (["train", "--episodes", "1"], 2, ["y-agent", "e-updater"]),
        (["train", "--episodes", "1", "--updater-model", "f-up"], 2, ["y-agent", "f-up"]),
        (
            ["evolve", "--generations", "1", "--reflector-model", "f-ref"],
            3,
            ["y-agent", "e-updater", "f-ref"],
        ),
        (
            ["evolve", "--generations", "1", "--dry-run", "--model", "f-agent"],
            3,
            ["f-agent", "e-updater", "e-reflector"],
        ),
    ],
)
def test_flag_beats_environment_beats_evolve_yaml(
    asked: Recorder,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    roles: int,
    expected: list[str],
) -> None:
    asked.limit = roles
    code, _, err = run_cli(capsys, *argv)
    assert code == 1
    assert one_sentence(err) == f"error: stopped after building {roles} roles."
    assert asked.names == expected


@pytest.mark.usefixtures("layered")
def test_the_agent_environment_variable_is_used_without_a_flag(
    asked: Recorder, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVOLVE_MODEL", "e-agent")
    run_cli(capsys, "run", "--split", "dev")
    assert asked.names == ["e-agent"]


def test_role_settings_from_evolve_yaml_reach_the_backend(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    cfg = workspace.config.model_copy(
        update={
            "models": workspace.config.models.model_copy(
                update={"structured": "tools", "timeout_s": 7.5}
            )
        }
    )
    cfg = with_models(cfg, updater="openai/small")
    behind = make_role_llm(cfg, "updater")
    assert isinstance(behind, RedactingLLM)  # the workspace's redactor
    llm = behind.inner
    assert isinstance(llm, OpenAIChat)
    assert (llm.max_tokens_default, llm.structured, llm.mode()) == (1024, "tools", "tools")
    assert llm._http._timeout.read == 7.5  # noqa: SLF001


def test_a_bad_cache_mode_in_evolve_yaml_names_the_key(tmp_path: Path) -> None:
    from evolve.errors import ConfigError
    from evolve.workspace._config import parse_config

    with pytest.raises(ConfigError, match="models.cache"):
        parse_config("models: {cache: sometimes}")
    assert parse_config("models: {cache: off}").models.cache == "off"
