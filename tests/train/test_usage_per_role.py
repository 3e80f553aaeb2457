"""Every token counted (issue 22, item 5): tokens and cost per role in `train --json`, each
episode's outcome and run-log line, the generation records and `evolve --json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conftest import cli_json, run_cli
from evolve.generations import load_records
from evolve.workspace import CONFIG_NAME, Workspace


def _price(ws: Workspace) -> None:
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["prices"] = {"sim": {"input": 1000.0, "output": 2000.0}}  # dollars per Mtok
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_train_counts_the_updater_beside_the_agent(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    _price(ws)
    report = cli_json(capsys, "train", "--episodes", "4")
    usage = report["usage"]
    assert set(usage) >= {"agent", "updater"}
    for role in ("agent", "updater"):
        u = usage[role]
        assert u["requests"] > 0 and u["tokens"] == u["input_tokens"] + u["output_tokens"] > 0
        assert u["cost"] > 0
    assert report["tokens"] == sum(u["tokens"] for u in usage.values())
    assert report["cost"] == pytest.approx(sum(u["cost"] for u in usage.values()))
    # Per episode: what its requests used, adding up to the run's.
    outcomes = report["outcomes"]
    for role in ("agent", "updater"):
        assert sum(o["tokens"].get(role, 0) for o in outcomes) == usage[role]["tokens"]
    assert sum(o["cost"] for o in outcomes) == pytest.approx(report["cost"])
    # ... and in the run log, one line per episode.
    [log] = list(ws.runs_dir.glob("train-*.jsonl"))
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [line["usage"]["tokens"] for line in lines] == [o["tokens"] for o in outcomes]
    # The text output says it too.
    code, out, err = run_cli(capsys, "train", "--episodes", "6")
    assert code == 0, err
    assert "tokens: agent " in out and ", updater " in out and "cost $" in out


def test_a_generation_records_every_role(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    result = cli_json(capsys, "evolve", "--generations", "1")
    [gen] = result["generations"]
    usage = gen["usage"]
    # training (agent, updater), reflection (reflector) and scoring (agent)
    assert {"agent", "updater", "reflector"} <= set(usage)
    assert all(u["requests"] > 0 and u["tokens"] > 0 for u in usage.values())
    # scoring alone: four splits' episodes; the agent's count holds them and training's
    scored = sum(
        round(gen[k]["tokens_per_episode"] * gen[k]["episodes"])
        for k in ("dev_base", "dev", "holdout_base", "holdout")
    )
    assert usage["agent"]["tokens"] > scored * 0.99
    [record] = load_records(ws)
    assert record.usage["reflector"].tokens == usage["reflector"]["tokens"]
    md = (Path(ws.root) / "generations" / "gen-0001.md").read_text(encoding="utf-8")
    assert "- tokens: agent " in md and "reflector" in md
