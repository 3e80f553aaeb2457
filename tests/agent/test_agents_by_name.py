"""Which agent plays, by name: `agent: {name: ...}` in evolve.yaml, the `evolve.agents`
registry, and every command that plays episodes (run, train, the gate of a dry run) playing
the agent the workspace names."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from conftest import GitRunner, one_sentence, run_cli
from evolve._registry import BUILT_IN
from evolve.agent import AgentContext, ModelAgent, agents, make_agent, workspace_agent
from evolve.errors import ConfigError, UnknownName
from evolve.llm import make_llm
from evolve.workspace import CONFIG_NAME, Workspace, parse_config

# A plug-in agent as a user writes one: it plays evolve's own loop over the role's model, and
# notes every request and the workspace root it was built for.
PROBE = textwrap.dedent(
    """
    from evolve.agent import ModelAgent

    SEEN = []   # (root, task_id, memory section) per episode
    ROOTS = []  # the root of every context the factory was called with

    class Probe:
        name = "probe-agent"

        def __init__(self, context):
            self.context = context
            self.inner = ModelAgent(context.llm)

        def run(self, request, world):
            SEEN.append((str(self.context.root), request.task_id, request.sections["memory"]))
            return self.inner.run(request, world)

    def make(context):
        ROOTS.append(str(context.root))
        return Probe(context)

    def not_an_agent(context):
        return 42
    """
)


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    name = f"byo_probe_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / f"{name}.py").write_text(PROBE, "utf-8")
    monkeypatch.syspath_prepend(str(folder))
    __import__(name)
    yield sys.modules[name]
    sys.modules.pop(name, None)


def _name(ws: Workspace, run_git: GitRunner, agent: str | None, **gate: int) -> None:
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text("utf-8"))
    data["agent"] = {"max_turns": 12} if agent is None else {"name": agent, "max_turns": 12}
    data["gate"].update(gate)
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: name the agent")


def test_the_config_names_one_agent() -> None:
    assert parse_config("version: 1\n").agent.agent_name == "model"
    cfg = parse_config("agent: {name: model, max_turns: 12}\n")
    assert (cfg.agent.name, cfg.agent.max_turns, cfg.agent.agent_name) == ("model", 12, "model")
    assert parse_config("agent: {name: 'pkg.mod:make'}\n").agent.agent_name == "pkg.mod:make"
    with pytest.raises(ConfigError, match=r"key 'agent.name': must be one word"):
        parse_config("agent: {name: 'two words'}\n")


def test_the_built_in_agent_is_model_and_a_miss_lists_the_choices() -> None:
    llm = make_llm("mock")
    built = make_agent("model", AgentContext(llm=llm, root=Path(".")))
    assert isinstance(built, ModelAgent) and built.llm is llm
    assert workspace_agent("model", llm, Path(".")) is None  # the episode plays `llm` as before
    entry = next(e for e in agents.entries() if e.name == "model")
    assert entry.source == BUILT_IN
    with pytest.raises(UnknownName, match=r"^unknown agent 'nosuch'; choose one of model"):
        make_agent("nosuch", AgentContext(llm=llm, root=Path(".")))


def test_a_factory_that_returns_no_agent_is_refused(probe: ModuleType) -> None:
    with pytest.raises(ConfigError, match=r"returned int, not an agent"):
        make_agent(f"{probe.__name__}:not_an_agent", AgentContext(make_llm("mock"), Path(".")))


def test_run_and_train_play_the_named_agent(
    ws: Workspace, run_git: GitRunner, probe: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    _name(ws, run_git, f"{probe.__name__}:make")
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    report = json.loads(out)
    log = ws.root / report["log_dir"] / "episodes.jsonl"
    models = {json.loads(line)["model"] for line in log.read_text("utf-8").splitlines()}
    assert models == {"probe-agent"}
    dev = len(probe.SEEN)
    assert dev == report["episodes"] > 0
    assert {root for root, _, _ in probe.SEEN} == {str(ws.root)}

    code, out, err = run_cli(capsys, "train", "--episodes", "3", "--json")
    assert code == 0, err
    assert len(probe.SEEN) == dev + 3
    trained = json.loads(out)
    assert trained["episodes"] == 3


def test_the_gate_scores_the_named_agent_on_a_copy_of_the_candidate(
    ws: Workspace, run_git: GitRunner, probe: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    _name(ws, run_git, f"{probe.__name__}:make", train_episodes=2, runs=1)
    head = run_git(ws.root, "rev-parse", "HEAD")
    code, _, err = run_cli(capsys, "evolve", "--generations", "1", "--dry-run", "--json")
    assert code == 0, err
    assert run_git(ws.root, "rev-parse", "HEAD") == head
    scored = {root for root in probe.ROOTS if root != str(ws.root)}
    assert scored, "the gate built no agent over a scored copy"
    assert all(not Path(root).exists() for root in scored)  # temporary copies, removed
    assert any(root in scored for root, _, _ in probe.SEEN)


def test_an_unknown_agent_is_one_sentence_listing_the_choices(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _name(ws, run_git, "nosuch")
    code, _, err = run_cli(capsys, "run", "--split", "dev")
    assert code != 0
    assert "unknown agent 'nosuch'; choose one of model" in one_sentence(err)


def test_plugins_lists_the_agents(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "plugins", "--json")
    assert code == 0, err
    listed = json.loads(out)["agents"]
    assert {"name": "model", "source": BUILT_IN} in [
        {"name": e["name"], "source": e["source"]} for e in listed
    ]
