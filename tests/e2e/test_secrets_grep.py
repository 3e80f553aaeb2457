"""Secrets by value everywhere (issue 28, item 3): the grep test.

A workspace is set up with secrets planted in the task instructions (an environment that adds
one), in every model reply (a model that plays `sim` and echoes them), in a hand note, in
`redact.values`, in a variable named by `redact.env` and in OPENAI_API_KEY. Then the jobs run
(train, a skills stream, run, evolve --dry-run, evolve, report, memory, log, show, review list;
the request cache on) and everything is grepped for every secret: each file under the
workspace, every git object decompressed (`git cat-file --batch-all-objects --batch`), the
request cache, the report, each command's output, and each request sent to a model other than
the agent's own task turn (the updater, reflector, evolver, selector; the agent's system
prompt too). Only the two files the person wrote the secrets into are exempt: evolve.yaml
(which lists them) and the hand note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli

PLANTS = Path(__file__).resolve().parent
pytestmark = pytest.mark.slow


def test_no_secret_reaches_any_file_object_cache_output_or_request(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_git: object,
) -> None:
    import _secret_plants as plants  # noqa: PLC0415  (found through the path set below)

    from evolve._format._units import hand_id

    def extra(root: Path, config: dict[str, Any]) -> None:
        config["train"]["episodes"] = 6
        config["gate"].update(runs=1, bootstrap_samples=100, train_episodes=2, generations=1)
        config["skills"]["batch_size"] = 2

    root = tmp_path / "ws"
    plants.plant(root, extra)
    note = plants.NOTE

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

    evolve("train")
    evolve("train", "--recipe", "skills", "--unrendered", "--episodes", "4")
    evolve("run", "--split", "dev")
    evolve("run", "--split", "dev", "--json")
    evolve("evolve", "--dry-run")
    evolve("evolve", "--generations", "1")
    evolve("report", "--out", str(tmp_path / "report"))
    code, out, err = run_cli(capsys, "memory")
    outputs.extend((out, err))
    assert code == 0 and f"note: {note} holds a secret listed in redact:" in err, err
    assert "<redacted>" in out
    doc = json.loads(evolve("memory", "--json"))
    assert doc["secrets_in"] == [note]
    evolve("log")
    evolve("log", "--json")
    evolve("review", "list")
    units = sorted(p for p in (root / "memory" / "alex").glob("ace-*.md"))
    assert units, "training wrote no unit: the test would prove nothing"
    evolve("show", units[0].stem)
    evolve("show", units[0].stem, "--json")
    evolve("show", hand_id(note))
    evolve("show", hand_id(note), "--json")

    swept = plants.sweep(root, cache, tmp_path / "report", capture, outputs)
    found, roles = swept.found, swept.roles
    print(
        f"secrets found: {len(found)}; scanned {swept.files} workspace files, "
        f"{swept.git_files} files under .git/, {swept.objects} git objects, {swept.cached} "
        f"cache files, the report, {swept.outputs} outputs, {swept.requests} requests "
        f"({sorted(roles)})"
    )
    assert {"agent_action", "ace_deltas", "reflector_edits", "skill_evolve"} <= roles
    assert {"skill_reflection", "skill_selection"} <= roles
    assert swept.cached > 50
    assert not found, f"{len(found)} secrets found, e.g. {found[:12]}"
