"""AppWorld end to end (issue 12 item 5): `evolve evolve` on an AppWorld workspace.

Three synthetic tasks (one build, two copies under other scenario ids) make a train, a dev and
a holdout split; the CLI runs with scripted models (`cli_runner.py`: the updater and the
reflector propose the persona's sign-off and greeting rules). One generation runs the
workspace's health probes, scores dev and holdout through the AppWorld worker (AppWorld's
evaluator AND the persona's checkers), trains, reflects and is judged: accepted where the agent
follows what it is told (`obedient`); rejected, in a `--dry-run` that leaves the workspace
byte-identical, where it does not (`text`).

Needs the AppWorld venv, like test_appworld_e2e.py (skips without it unless required).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from appworld_helpers import live_workers as _live_workers
from appworld_helpers import require_appworld
from appworld_helpers import run_cli as _evolve

from evolve.envs.appworld._setup import _bucket

pytestmark = [pytest.mark.appworld, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SIGN_OFF = "Sign off every text message"


def _family_in(split: str) -> str:
    """A 7-hex scenario id that the hash rule puts in `split` (no dataset files here)."""
    for n in range(1, 500):
        family = f"{n:07x}"
        if _bucket(family) == split:
            return family
    raise AssertionError(f"no {split} family found")


@pytest.fixture(scope="module")
def three_splits(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    python = require_appworld()
    root = tmp_path_factory.mktemp("appworld-root")
    ids = {split: f"{_family_in(split)}_1" for split in ("train", "dev", "holdout")}
    started = time.perf_counter()
    done = subprocess.run(
        [str(python), str(HERE / "synthetic_task.py"), str(root), *ids.values()],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    print(f"three synthetic tasks built in {time.perf_counter() - started:.1f} s")
    return root, ids


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout


def _snapshot(ws: Path) -> dict[str, str]:
    """Every file of the workspace, `.git` included, by content hash (but the writer lock: an
    empty file any writing command leaves for its flock, on every environment)."""
    return {
        str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and p.name != "evolve-writer.lock"
    }


def test_evolve_one_generation_on_appworld(
    three_splits: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, ids = three_splits
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOLVE_WORKSPACE")}
    env["APPWORLD_ROOT"] = str(root)
    env.update(
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
    )  # fmt: skip
    ws = tmp_path / "ws"
    rc, out, err, _ = _evolve(tmp_path, env, "obedient", "init", str(ws), "--env", "appworld")
    assert rc == 0, err
    splits = yaml.safe_load((ws / "evalset" / "splits.yaml").read_text())
    assert {s: splits[s] for s in ids} == {s: [t] for s, t in ids.items()}

    # As small a generation as says something: one run per task, one training episode.
    config = yaml.safe_load((ws / "evolve.yaml").read_text())
    config["gate"].update(runs=1, train_episodes=1)
    config["train"]["recipe"] = "reflexion"
    (ws / "evolve.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    _git(ws, "commit", "-qam", "hand: a one-episode gate")
    base = _git(ws, "rev-parse", "HEAD").strip()

    # A dry run changes nothing, not even inside .git. Its agent (`text`) ignores what it is
    # told, so its candidate scores as its base and the gate rejects it.
    before = _snapshot(ws)
    t0 = time.perf_counter()
    rc, out, err, _ = _evolve(ws, env, "text", "evolve", "--dry-run", "--generations", "1",
                              "--json")  # fmt: skip
    dry_s = time.perf_counter() - t0
    assert rc == 0, err
    dry = json.loads(out)
    (tried,) = dry["generations"]
    assert dry["dry_run"] is True and tried["dry_run"] is True
    assert tried["tests_passed"] is True, tried["tests_output"]
    assert tried["dev_base"]["score"] == tried["dev"]["score"] == 0.0
    assert tried["verdict"] == "rejected", tried["reason"]
    assert tried["reason"].startswith("score did not improve: dev gain +0.000"), tried["reason"]
    assert SIGN_OFF in dry["diffs"]["1"]
    assert _snapshot(ws) == before

    t0 = time.perf_counter()
    rc, out, err, _ = _evolve(ws, env, "obedient", "evolve", "--generations", "1", "--json")
    gen_s = time.perf_counter() - t0
    assert rc == 0, err
    (record,) = json.loads(out)["generations"]
    assert record["reason"] and not record["reason"].startswith("error"), record["reason"]

    # The workspace's health probes ran on the AppWorld evalset (every split named, disjoint).
    assert record["tests_passed"] is True, record["tests_output"]
    assert " passed" in record["tests_output"] and "4 passed" in record["tests_output"]

    # Dev and holdout were scored through the worker: at the base the agent does the task
    # (AppWorld's evaluator passes it) but neither greets nor signs off as the persona wants (the
    # persona's checkers fail it).
    for name in ("dev_base", "holdout_base"):
        score = record[name]
        assert score["episodes"] == 1 and score["score"] == 0.0, (name, score)
        assert score["rules"] == {"sms_signoff": 1.0, "sms_greeting": 1.0}, (name, score)
    # The candidate learned the sign-off (memory from training) and the greeting (guidance
    # from the reflector): now both the evaluator and the checker pass it, and the gate keeps it.
    kinds = [c["kind"] for c in record["changes"]]
    assert "memory" in kinds and "prompt" in kinds, record["changes"]
    for name in ("dev", "holdout"):
        score = record[name]
        assert score["episodes"] == 1 and score["score"] == 1.0, (name, score)
        assert score["rules"] == {"sms_signoff": 0.0, "sms_greeting": 0.0}, (name, score)
    assert record["verdict"] == "accepted", record["reason"]
    assert record["base"] == base and record["final"] == record["candidate"] != base
    assert _git(ws, "rev-parse", "HEAD").strip() == record["final"]
    assert SIGN_OFF in (ws / "prompts" / "system.md").read_text()

    # The record is on refs/evolve/records; the tree is clean; no worker outlives the command.
    stored = _git(ws, "show", "refs/evolve/records:gen-0001.json")
    assert json.loads(stored)["verdict"] == "accepted"
    assert _git(ws, "status", "--porcelain") == ""
    assert _live_workers(root) == []
    assert not list((root / "experiments" / "outputs").glob("evolve-*"))

    # Nothing of AppWorld in the workspace's or the project's tracked files.
    tracked = _git(ws, "ls-files").split()
    assert not [p for p in tracked if "api_docs" in p or p.endswith((".db", "specs.json"))]
    assert not [p for p in _git(ws, "ls-tree", "-r", "--name-only", "refs/evolve/records").split()
                if not p.startswith("gen-")]  # fmt: skip
    repo_files = _git(REPO, "ls-files").split()
    assert not [
        p for p in repo_files if p.endswith(".db") or "/api_docs/" in p or "specs.json" in p
    ]
    for path in ws.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            assert "eyJ" not in path.read_text(errors="replace"), path
    print(f"evolve --dry-run {dry_s:.1f} s, evolve (1 generation) {gen_s:.1f} s")
