"""End to end against a real OpenAI-compatible server: llama-cpp-python with SmolLM2-135M.

`.ci/llama_server.sh` prepares the server and exports EVOLVE_LLAMA_PYTHON and
EVOLVE_LLAMA_GGUF. Without them these tests skip, except where CI=true or
EVOLVE_REQUIRE_REAL_SERVER=1, where they fail. The model is tiny and does the tasks badly:
the tests check the path (requests accepted, replies parsed or recorded as failed turns with
their reason, usage recorded, no crash, memory committed or a refusal logged), not the score.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from conftest import GitRunner, run_cli
from evolve.llm._structured import ENDPOINTS_FILE, MODES
from evolve.workspace import Workspace
from factories import VERIFY_AFTER, LlamaServer, llama_server

pytestmark = pytest.mark.real_server

READY_TIMEOUT_S = 120.0
MODEL = "openai/smollm2"
Server = LlamaServer  # the name the window tests import


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with llama_server(tmp_path_factory.mktemp("llama"), ready_s=READY_TIMEOUT_S) as started:
        yield started


@pytest.fixture
def small_ws(
    ws: Workspace, run_git: GitRunner, server: Server, monkeypatch: pytest.MonkeyPatch
) -> Workspace:
    """The workspace with two dev tasks, three turns and small replies, on the server."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name in ("EVOLVE_MODEL", "EVOLVE_UPDATER_MODEL", "EVOLVE_REFLECTOR_MODEL", "EVOLVE_CACHE"):
        monkeypatch.delenv(name, raising=False)
    config = ws.root / "evolve.yaml"
    data = yaml.safe_load(config.read_text())
    data["agent"]["max_turns"] = 3
    data["models"]["max_tokens"] = {"agent": 96, "updater": 192, "reflector": 256}
    data["models"]["timeout_s"] = 60
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    splits = ws.evalset_dir / "splits.yaml"
    data = yaml.safe_load(splits.read_text())
    data["dev"] = data["dev"][:2]
    splits.write_text(yaml.safe_dump(data, sort_keys=False))
    run_git(ws.root, "commit", "-qam", "small settings for the real server")
    return Workspace(ws.root)


def _check_protocol(server: Server, started_at: int) -> None:
    """Every chat request was accepted, except the refusals that negotiated the rung."""
    statuses = server.statuses()[started_at:]
    assert statuses, "no request reached the server"
    memory = Path(os.environ["EVOLVE_CACHE_DIR"]) / ENDPOINTS_FILE
    rung = json.loads(memory.read_text()).get(server.base_url) if memory.exists() else None
    refusals = MODES.index(rung) if rung else 0
    assert all(s == 200 for s in statuses[refusals:]), statuses
    assert len([s for s in statuses if s != 200]) <= refusals


def test_run_on_a_real_server(
    small_ws: Workspace, server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    before = len(server.statuses())
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--model", MODEL, "--json")
    assert code == 0, err
    report = json.loads(out)
    _check_protocol(server, before)
    assert report["model"] == MODEL and report["episodes"] == 2
    assert report["tokens"] > 0 and all(t["tokens"] > 0 for t in report["tasks"])
    lines = (small_ws.root / report["log_dir"] / "episodes.jsonl").read_text().splitlines()
    for line in lines:
        episode = json.loads(line)
        assert episode["input_tokens"] > 0 and episode["output_tokens"] > 0
        assert episode["turns"], "an episode without a turn"
        for turn in episode["turns"]:
            # A reply was used (a call the world answered), or the failed turn says why.
            assert turn["call"] is not None or (turn["bad_reply"] or "").strip(), turn


def test_train_on_a_real_server(
    small_ws: Workspace, server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    before = len(server.statuses())
    argv = ["train", "--episodes", "2", "--model", MODEL, "--updater-model", MODEL, "--json"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    report = json.loads(out)
    _check_protocol(server, before)
    assert report["episodes"] == 2
    outcomes = report.get("outcomes") or []
    learned = report["commits"] or any(o.get("refused") for o in outcomes)
    assert learned or report["accepted"] == 2, report


def test_skills_on_a_real_server(
    small_ws: Workspace,
    server: Server,
    run_git: GitRunner,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The skills recipe's three model roles (reflector, evolver, selector) over HTTP: one
    batch of two procedure-task episodes. The tiny model's replies are hostile input: each is
    used or refused with its reason, and the batch still makes its one commit."""
    from evolve.envs.persona_world._procedures import write_procedures

    root = small_ws.root
    write_procedures(root / "evalset")
    (root / "memory" / "skills" / "general").mkdir(parents=True)
    (root / "memory" / "skills" / "general" / "verify-after.md").write_text(VERIFY_AFTER)
    config = root / "evolve.yaml"
    data = yaml.safe_load(config.read_text())
    data["train"]["recipe"] = "skills"
    data["skills"]["batch_size"] = 2
    for role in ("reflector", "evolver", "selector"):
        data["models"][role] = MODEL
    data["models"]["max_tokens"].update({"evolver": 256, "selector": 64})
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "skills on the real server")
    head = run_git(root, "rev-parse", "HEAD").strip()

    import evolve.skills._select as select

    replies: list[tuple[str, list[str], str]] = []  # each reply, what was kept, the note
    read = select.read_selection

    def spy(reply: str, skills: list[select.Skill], b: int) -> tuple[list[select.Skill], str]:
        kept, note = read(reply, skills, b)
        replies.append((reply, [k.id for k in kept], note))
        return kept, note

    monkeypatch.setattr(select, "read_selection", spy)
    before = len(server.statuses())
    argv = ["train", "--episodes", "2", "--model", MODEL, "--reflector-model", MODEL, "--json"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    report = json.loads(out)
    _check_protocol(server, before)
    assert report["episodes"] == 2
    log = root / "generations" / "runs" / f"train-{report['stream'].replace('/', '-')}.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == 2
    assert len(replies) >= 2, replies  # the model selector was asked for each episode
    for r in records:  # whatever the model answered, only candidates are injected
        assert set(r["skills_injected"]) <= {"verify-after"}, r["skills_injected"]
    assert all(set(kept) <= {"verify-after"} for _, kept, _ in replies), replies
    # what the selector's reply lost is said in the episode's record (None: nothing lost)
    notes = {n or None for _, _, n in replies}
    assert {r["skills_note"] for r in records} <= notes, (records, replies)
    kinds = run_git(root, "log", "--format=%(trailers:key=Evolve-Kind,valueonly)", f"{head}..")
    failed = [r for r in records if not r["accepted"]]
    if failed:  # one batch commit: the candidates with their verdicts, or why they were refused
        assert kinds.split() == ["skills", "batch"], kinds
        body = run_git(root, "log", "-1", "--format=%B")
        assert "Batch 0: episodes 0, 1" in body, body
    assert run_git(root, "status", "--porcelain") == ""
    code, out, err = run_cli(capsys, "skills", "--json")
    assert code == 0, err
    assert "verify-after" in {s["id"] for s in json.loads(out)["skills"]}
