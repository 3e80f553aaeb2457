"""Secrets by value everywhere, for `evolve compare` (issue 28, item 3): the grep test of
`test_secrets_grep.py` over an experiment.

The same plants (secrets in the task instructions, in every model reply, in a hand note, in
`redact.values`, in a variable named by `redact.env` and in OPENAI_API_KEY), then a tiny
experiment runs with the sim models (`evolve compare`, then `--plan`, `--json`, and the report
that shows its results), and everything is grepped for every secret: each file under the
workspace (the experiment's results folder included), every git object decompressed (the
arms' refs hold their training commits), the request cache, the report, each command's output
and each request sent to a model other than the agent's own task turn. Only evolve.yaml
(which lists the secrets) and the hand note are exempt.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli

PLANTS = Path(__file__).resolve().parent
pytestmark = pytest.mark.slow

EXPERIMENT = """\
name: secrets
personas: [alex]
feedback: [instance]
orders: [0]
eval_seeds: [0]
episodes: 4
splits: [dev]
bootstrap_samples: 100
arms:
  none: {}
  oracle: {}
  fixed: {type: fixed, match: ace}
  ace: {}
  reflexion: {caps: {units: 3}}
"""


def test_no_secret_reaches_anything_a_compare_writes_or_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import _secret_plants as plants  # noqa: PLC0415  (found through the path set below)

    def extra(root: Path, config: dict[str, Any]) -> None:
        experiment = root / "experiments" / "secrets.yaml"
        experiment.parent.mkdir(parents=True, exist_ok=True)
        experiment.write_text(EXPERIMENT, encoding="utf-8")

    root = tmp_path / "ws"
    plants.plant(root, extra)

    capture = tmp_path / "requests.jsonl"
    cache = tmp_path / "cache"
    monkeypatch.syspath_prepend(str(PLANTS))
    monkeypatch.setenv(plants.CAPTURE, str(capture))
    monkeypatch.setenv(plants.ENV_NAME, plants.IN_ENV)
    monkeypatch.setenv("OPENAI_API_KEY", plants.IN_OPENAI)
    monkeypatch.setenv("EVOLVE_CACHE_DIR", str(cache))
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    monkeypatch.chdir(root)
    capsys.readouterr()

    outputs: list[str] = []

    def evolve(*args: str) -> str:
        code, out, err = run_cli(capsys, *args)
        outputs.extend((out, err))
        assert code == 0, (args, err[-2000:])
        return out

    evolve("compare", "experiments/secrets.yaml", "--plan")
    evolve("compare", "experiments/secrets.yaml", "--jobs", "1")
    doc = json.loads(evolve("compare", "experiments/secrets.yaml", "--jobs", "1", "--json"))
    evolve("report", "--out", str(tmp_path / "report"))

    arms = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/evolve/arms"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert arms, "compare trained no arm: the test would prove nothing"
    assert doc, "compare printed no results"

    files = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts]
    results = [p for p in files if "experiments" in p.relative_to(root).parts[:2]]
    assert any(p.suffix in (".json", ".jsonl") for p in results), sorted(map(str, results))
    swept = plants.sweep(root, cache, tmp_path / "report", capture, outputs)
    found, roles = swept.found, swept.roles
    print(
        f"secrets found: {len(found)}; scanned {swept.files} workspace files ({len(results)} "
        f"experiment results), {swept.git_files} files under .git/, {swept.objects} git "
        f"objects ({len(arms)} arm refs), {swept.cached} cache files, the report, "
        f"{swept.outputs} outputs, {swept.requests} requests ({sorted(roles)})"
    )
    assert {"agent_action", "ace_deltas"} <= roles
    assert swept.cached
    assert not found, f"{len(found)} secrets found, e.g. {found[:12]}"
