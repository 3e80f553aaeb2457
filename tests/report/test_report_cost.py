"""The report's "Tokens and cost" section: per generation (from the records) and per run and
training log (from the logs), with the prices in evolve.yaml."""

from __future__ import annotations

import json
import re
from html import escape

import pytest
import yaml

from conftest import run_cli
from evolve.generations import GenerationRecord, ScoreRecord, save_record
from evolve.report import build_report
from evolve.workspace import CONFIG_NAME, Workspace


def _section(html: str) -> str:
    start = html.index('<h2 id="cost">')
    return html[start : html.index("<h2 ", start + 1)]


def _rows(section: str) -> list[list[str]]:
    return [
        re.findall(r"<td>(.*?)</td>", row)
        for row in re.findall(r"<tr>(.*?)</tr>", section)
        if "<td>" in row
    ]


def _score(episodes: int, tokens_per_episode: float, cost: float) -> ScoreRecord:
    return ScoreRecord(
        score=0.5, violation_rate=0.1, episodes=episodes,
        tokens_per_episode=tokens_per_episode, cost=cost, rules={},
    )  # fmt: skip


def test_generations_show_their_scoring_tokens_and_cost(ws: Workspace) -> None:
    head = ws.store.head()
    assert head is not None
    save_record(
        ws,
        GenerationRecord(
            number=1, started="2025-01-01T00:00:00+00:00", finished="2025-01-01T00:01:00+00:00",
            base=head, candidate=head, final=head,
            dev_base=_score(20, 1000.0, 0.04), dev=_score(20, 1200.0, 0.05),
            holdout_base=_score(10, 1000.0, 0.02), holdout=_score(10, 1100.0, 0.025),
            protected_hash="x", protected_hash_candidate="x", tests_passed=True,
            verdict="rejected", reason="cost per dev episode <too high>",
        ),
    )  # fmt: skip
    section = _section(build_report(ws))
    # 60 episodes; 20x1000 + 20x1200 + 10x1000 + 10x1100 tokens; $0.135; $0.05 / 20 per episode.
    assert _rows(section)[0] == [
        "1", "rejected", "60", "65,000", "agent (scoring only)", "$0.1350", "$0.002500"
    ]  # fmt: skip


def test_runs_and_training_logs_show_tokens_and_cost_at_the_configured_prices(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["prices"] = {"sim": {"input": 1000.0, "output": 2000.0}}  # dollars per Mtok
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["cost"] > 0
    code, _, err = run_cli(capsys, "train", "--episodes", "3")
    assert code == 0, err

    section = _section(build_report(ws))
    rows = {row[1]: row for row in _rows(section)}
    run = rows["run dev"]
    assert run[0] == summary["log_dir"].rsplit("/", 1)[-1]
    assert run[2:] == [
        "sim", "20", f"{summary['tokens']:,}", f"agent {summary['tokens']:,}",
        f"${summary['cost']:.4f}",
    ]  # fmt: skip
    [log] = list(ws.runs_dir.glob("train-*.jsonl"))
    episodes = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    # Every role's tokens: the agent's (its own count in the record) and the updater's.
    agent = sum(e["usage"]["tokens"]["agent"] for e in episodes)
    assert agent == sum(e["input_tokens"] + e["output_tokens"] for e in episodes)
    updater = sum(e["usage"]["tokens"].get("updater", 0) for e in episodes)
    assert updater > 0
    cost = sum(e["usage"]["cost"] for e in episodes)
    assert cost > sum(e["cost"] for e in episodes) > 0  # the updater's requests cost too
    assert rows["training"] == [
        log.stem, "training", "sim", "3", f"{agent + updater:,}",
        f"agent {agent:,}; updater {updater:,}", f"${cost:.4f}",
    ]  # fmt: skip


def test_a_workspace_without_logs_says_so_and_a_broken_log_is_skipped(ws: Workspace) -> None:
    section = _section(build_report(ws))
    assert "No generation records yet." in section and "No run or training logs yet." in section
    broken = ws.runs_dir / "20250101T000000Z-dev-alex"
    broken.mkdir(parents=True)
    (broken / "summary.json").write_text("{not json", encoding="utf-8")
    section = _section(build_report(ws))
    assert "No run or training logs yet." in section
    assert escape("{not json") not in section
