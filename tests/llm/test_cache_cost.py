"""The request cache (read, write, replay) and cost accounting."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)

from conftest import GitRunner, cli_json, one_sentence, run_cli
from evolve.errors import ModelError
from evolve.llm import (
    CachedLLM,
    MockLLM,
    PricedLLM,
    Rate,
    ReplayMiss,
    RequestCache,
    Usage,
    canonical_request,
    make_role_llm,
    request_key,
    with_models,
)
from evolve.llm._redacting import RedactingLLM
from evolve.llm._types import JsonSchema, Message
from evolve.workspace import Workspace

CHAT = [Message("system", "S"), Message("user", "Ünïcode?")]
SCHEMA = JsonSchema("action", {"type": "object"})


def test_the_key_is_sha256_of_the_documented_canonical_form() -> None:
    request = canonical_request("openai/m", CHAT, SCHEMA, 0, 7, 64)
    text = (
        '{"max_tokens":64,"messages":[["system","S"],["user","Ünïcode?"]],"model":"openai/m",'
        '"schema":{"name":"action","schema":{"type":"object"}},"seed":7,"temperature":0.0,"v":1}'
    )
    assert request_key(request) == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    # Every field is part of the key.
    others = [
        canonical_request("openai/n", CHAT, SCHEMA, 0, 7, 64),
        canonical_request("openai/m", CHAT[:1], SCHEMA, 0, 7, 64),
        canonical_request("openai/m", CHAT, None, 0, 7, 64),
        canonical_request("openai/m", CHAT, SCHEMA, 0.5, 7, 64),
        canonical_request("openai/m", CHAT, SCHEMA, 0, 8, 64),
        canonical_request("openai/m", CHAT, SCHEMA, 0, 7, 65),
    ]
    assert len({request_key(request), *map(request_key, others)}) == 7


def test_write_records_misses_and_answers_hits_without_the_model(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path)
    model = MockLLM(["first", "second"], name="openai/m")
    llm = CachedLLM(model, "write", cache)

    a = llm.complete(CHAT, seed=1)
    b = llm.complete(CHAT, seed=1)
    c = llm.complete(CHAT, seed=2)

    assert (a.text, b.text, c.text) == ("first", "first", "second")
    assert (a.cached, b.cached) == (False, True)
    assert b.usage == a.usage
    assert len(model.calls) == 2 and (llm.hits, llm.misses) == (1, 2)
    entries = sorted(tmp_path.rglob("*.json"))
    assert len(entries) == 2
    entry = json.loads(entries[0].read_text())
    assert entry["key"].startswith("sha256:") and entry["request"]["model"] == "openai/m"
    assert entries[0].name == entry["key"].split(":")[1] + ".json"


def test_read_uses_hits_but_records_nothing(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path)
    CachedLLM(MockLLM(["kept"], name="m"), "write", cache).complete(CHAT)
    model = MockLLM(["fresh"], name="m")
    llm = CachedLLM(model, "read", cache)
    assert llm.complete(CHAT).text == "kept"
    assert llm.complete(CHAT, seed=3).text == "fresh"
    assert len(list(tmp_path.rglob("*.json"))) == 1


def test_replay_answers_hits_and_fails_on_a_miss_in_one_sentence(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path)
    CachedLLM(MockLLM(["recorded"], name="m"), "write", cache).complete(CHAT)
    model = MockLLM([], name="m")
    llm = CachedLLM(model, "replay", cache)
    assert llm.complete(CHAT).text == "recorded"
    with pytest.raises(ReplayMiss) as caught:
        llm.complete(CHAT, seed=9)
    message = str(caught.value)
    assert message.startswith("--cache replay found no recorded reply of m for request sha256:")
    assert message.endswith("record it first with --cache write.") and message.count(". ") == 0
    assert model.calls == []


def test_the_default_bound_is_part_of_the_key(tmp_path: Path) -> None:
    model = MockLLM(["a", "b"], name="m")
    model.max_tokens_default = 100  # type: ignore[attr-defined]
    llm = CachedLLM(model, "write", RequestCache(tmp_path))
    llm.complete(CHAT)
    assert llm.complete(CHAT, max_tokens=100).cached
    assert not llm.complete(CHAT, max_tokens=50).cached


def test_cost_is_tokens_times_price_and_a_cache_hit_costs_nothing(tmp_path: Path) -> None:
    inner = MockLLM(["abcdefgh"], name="openai/m")  # 8 characters: 2 estimated tokens
    llm = PricedLLM(CachedLLM(inner, "write", RequestCache(tmp_path)), Rate(2.0, 10.0))
    first = llm.complete(CHAT)
    again = llm.complete(CHAT)
    assert first.usage.output_tokens == 2
    expected = (first.usage.input_tokens * 2.0 + 2 * 10.0) / 1_000_000
    assert first.usage.cost == pytest.approx(expected)
    assert again.usage.cost == 0.0 and again.usage.input_tokens == first.usage.input_tokens
    assert (first.usage + first.usage).cost == pytest.approx(2 * expected)
    assert Usage(1, 2, 0.5) + Usage(3, 4, 0.25) == Usage(4, 6, 0.75)


def test_roles_get_cache_and_price_from_evolve_yaml(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data = workspace.config.model_dump()
    data["prices"] = {"gpt-x": {"input": 1.0, "output": 4.0}}
    cfg = type(workspace.config).model_validate(data)
    behind = make_role_llm(with_models(cfg, agent="openai/gpt-x", cache="replay"), "agent")
    assert isinstance(behind, RedactingLLM)  # the workspace's redactor
    llm = behind.inner
    assert isinstance(llm, PricedLLM) and llm.rate == Rate(1.0, 4.0)
    assert isinstance(llm.inner, CachedLLM) and llm.inner.mode == "replay"
    # Replay needs neither the endpoint nor its key: the miss is the error.
    with pytest.raises(ReplayMiss):
        llm.complete(CHAT)
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        make_role_llm(with_models(cfg, agent="openai/gpt-x", cache="write"), "agent")


def _price_sim(ws: Workspace, run_git: GitRunner) -> None:
    path = ws.root / "evolve.yaml"
    data = yaml.safe_load(path.read_text())
    data["prices"] = {"sim": {"input": 3.0, "output": 15.0}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    run_git(ws.root, "commit", "-qam", "prices")


def test_run_records_cost_per_episode_and_in_total(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _price_sim(ws, run_git)
    report = cli_json(capsys, "run", "--split", "dev")
    costs = [t["cost"] for t in report["tasks"]]
    assert all(c > 0 for c in costs)
    assert report["cost"] == pytest.approx(sum(costs), abs=1e-6)
    lines = (ws.root / report["log_dir"] / "episodes.jsonl").read_text().splitlines()
    episode = json.loads(lines[0])
    assert episode["cost"] == pytest.approx(
        (episode["input_tokens"] * 3.0 + episode["output_tokens"] * 15.0) / 1_000_000
    )
    code, out, _ = run_cli(capsys, "run", "--split", "dev")
    assert code == 0 and f"cost ${report['cost']:.4f}" in out


def test_replay_of_a_recorded_run_gives_the_same_report(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = cli_json(capsys, "run", "--split", "dev", "--cache", "write")
    replayed = cli_json(capsys, "run", "--split", "dev", "--cache", "replay")
    for key in ("score", "violation_rate", "tokens"):
        assert replayed[key] == recorded[key]
    code, _, err = run_cli(capsys, "run", "--split", "dev", "--cache", "replay", "--runs", "2")
    assert code == 1
    assert "--cache replay found no recorded reply of sim" in one_sentence(err)
