"""examples/support_desk against the real llama.cpp server: with the example's OpenAI-compatible
tool-calling loop (`examples/agents/openai_loop.py`) as the workspace's agent, every command a
user types runs to its end: init, run, train, evolve --dry-run, evolve, revert, log. Quality is
not the point (the model is SmolLM2-135M); the updater stays the example's scripted one so a
training episode that fails writes memory the revert can take back, and the wall time stays
small (four tasks, two turns, short replies).

Needs the server `.ci/llama_server.sh` prepares (EVOLVE_LLAMA_PYTHON, EVOLVE_LLAMA_GGUF):
skipped without it, except where CI=true or EVOLVE_REQUIRE_REAL_SERVER=1.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import GIT_ENV, run_cli
from factories import llama_server

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DESK = EXAMPLES / "support_desk"
KEEP = {"desk-01": "train", "desk-03": "train", "desk-19": "dev", "desk-31": "holdout"}


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real server's API root."""
    with llama_server(tmp_path_factory.mktemp("llama")) as started:
        yield started.base_url


def _workspace(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """`evolve init --env files`, the example's evalset cut to four tasks, its prompt, and the
    loop kept in the workspace's protected `agent/` and named in evolve.yaml; committed."""
    code, _, err = run_cli(capsys, "init", "--env", "files", str(root))
    assert code == 0, err
    shutil.rmtree(root / "evalset")
    shutil.copytree(
        DESK / "evalset", root / "evalset", ignore=shutil.ignore_patterns("__pycache__")
    )
    lines = (root / "evalset" / "tasks.jsonl").read_text("utf-8").splitlines()
    kept = [line for line in lines if line.strip() and json.loads(line)["id"] in KEEP]
    (root / "evalset" / "tasks.jsonl").write_text("\n".join(kept) + "\n", "utf-8")
    shutil.copy2(DESK / "prompts" / "system.md", root / "prompts" / "system.md")
    (root / "agent").mkdir()
    shutil.copy2(EXAMPLES / "agents" / "openai_loop.py", root / "agent" / "openai_loop.py")
    shutil.copy2(DESK / "desk_agent.py", root / "agent" / "desk_agent.py")
    config = yaml.safe_load((root / "evolve.yaml").read_text("utf-8"))
    config["agent"].update(name="openai_loop:make_agent", path=["agent"], max_turns=2)
    scripted = "desk_agent:scripted_updater"
    config["models"].update(agent="openai/smollm2", updater=scripted, reflector=scripted)
    config["train"].update(feedback="corrective", episodes=2)
    config["gate"].update(runs=1, train_episodes=1)
    config["protected"].append("agent/")
    (root / "evolve.yaml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    for args in (["add", "-A"], ["commit", "-q", "-m", "support desk on a real server"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    monkeypatch.chdir(root)
    return root


@pytest.mark.real_server
@pytest.mark.slow
def test_every_command_runs_with_the_example_agent_on_the_real_server(
    tmp_path: Path,
    llama: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))  # agent/ is taken off the path after
    monkeypatch.setenv("OPENAI_BASE_URL", llama)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-no-key")
    monkeypatch.setenv("OPENAI_LOOP_MAX_TOKENS", "96")
    root = _workspace(tmp_path / "desk", capsys, monkeypatch)

    code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    report = json.loads(out)
    lines = (root / report["log_dir"] / "episodes.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert {r["model"] for r in records} == {"openai-loop/smollm2"}
    assert sum(r["input_tokens"] for r in records) > 0

    code, out, err = run_cli(capsys, "train", "--episodes", "2", "--json")
    assert code == 0, err
    trained = json.loads(out)
    assert trained["episodes"] == 2

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    code, out, err = run_cli(capsys, "evolve", "--generations", "1", "--dry-run", "--json")
    assert code == 0, err
    again = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    assert again.stdout == head.stdout  # a dry run changes nothing

    code, out, err = run_cli(capsys, "evolve", "--generations", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["generations"][0]["verdict"]

    code, out, err = run_cli(capsys, "log", "--json")
    assert code == 0, err
    memory = [e for e in json.loads(out)["entries"] if e["recipe"] == "ace"]
    assert memory, "training wrote no memory commit to revert"
    commit = memory[0]["commit"]  # the newest
    code, out, err = run_cli(capsys, "revert", commit, "--reason", "real server smoke", "--json")
    assert code == 0, err
    code, _, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
