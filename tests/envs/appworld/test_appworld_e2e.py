"""AppWorld end to end (issue 12): a synthetic task built at test time on the installed apps,
`evolve run` and `evolve train --episodes 2` through the worker with a scripted mock model.

Needs the AppWorld venv (`evolve appworld setup`, or `.ci/appworld.sh`). It skips without it,
except where CI=true or EVOLVE_REQUIRE_APPWORLD=1: there a missing venv fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from appworld_helpers import live_workers as _live_workers
from appworld_helpers import require_appworld
from appworld_helpers import run_cli as _evolve

from evolve.envs.appworld._setup import _bucket

pytestmark = [pytest.mark.appworld, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
REDACTED = "<redacted>"


def _train_family() -> str:
    """A 7-hex scenario id that the hash rule puts in train (no dataset files here)."""
    for n in range(1, 500):
        family = f"{n:07x}"
        if _bucket(family) == "train":
            return family
    raise AssertionError("no train family found")


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    python = require_appworld()
    root = tmp_path_factory.mktemp("appworld-root")
    task_id = f"{_train_family()}_1"
    started = time.perf_counter()
    done = subprocess.run(
        [str(python), str(HERE / "synthetic_task.py"), str(root), task_id],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    print(f"synthetic task built in {time.perf_counter() - started:.1f} s")
    return root, task_id


def _calls(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t["call"] for r in records for t in r["turns"] if t.get("call")]


def test_run_and_train_on_a_synthetic_appworld_task(
    synthetic_root: tuple[Path, str], tmp_path: Path
) -> None:
    root, task_id = synthetic_root
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOLVE_WORKSPACE")}
    env["APPWORLD_ROOT"] = str(root)
    env.update(
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
    )  # fmt: skip
    ws = tmp_path / "ws"

    rc, out, err, _ = _evolve(tmp_path, env, "text", "init", str(ws), "--env", "appworld")
    assert rc == 0, err
    config = yaml.safe_load((ws / "evolve.yaml").read_text())
    assert config["environment"] == "appworld"
    splits = yaml.safe_load((ws / "evalset" / "splits.yaml").read_text())
    assert splits["train"] == [task_id] and not splits["dev"] and not splits["holdout"]

    # A run where the agent does not do the task: AppWorld's evaluator says so.
    t0 = time.perf_counter()
    rc, out, err, _ = _evolve(ws, env, "idle", "run", "--split", "train", "--json")
    idle_s = time.perf_counter() - t0
    assert rc == 0, err
    idle = json.loads(out)
    runs = sorted((ws / "generations" / "runs").glob("*-train-*"))
    records = [json.loads(x) for x in (runs[-1] / "episodes.jsonl").read_text().splitlines()]
    assert [r["task_success"] for r in records] == [False]
    assert "AppWorld's evaluation failed 1 of 1 checks" in records[0]["failure"]
    assert idle is not None

    # A run where the agent sends the text: AppWorld passes it, the persona's checkers do not.
    t0 = time.perf_counter()
    rc, out, err, _ = _evolve(ws, env, "text", "run", "--split", "train", "--json")
    run_s = time.perf_counter() - t0
    assert rc == 0, err
    runs = sorted((ws / "generations" / "runs").glob("*-train-*"))
    records = [json.loads(x) for x in (runs[-1] / "episodes.jsonl").read_text().splitlines()]
    (record,) = records
    assert record["task_success"] is True and record["failure"] is None
    assert "sms_signoff" in record["applicable_rules"]
    assert "sms_signoff" in record["violations"] and record["accepted"] is False
    calls = _calls(records)
    tools = [c["tool"] for c in calls]
    assert tools == [
        "supervisor__show_account_passwords", "supervisor__show_profile", "phone__login",
        "phone__search_contacts", "phone__send_text_message", "supervisor__complete_task",
    ]  # fmt: skip
    login = calls[2]
    assert login["result"]["access_token"] == REDACTED and login["args"]["password"] == REDACTED
    assert calls[4]["args"]["access_token"] == REDACTED
    assert calls[4]["args"]["message"] == "Dinner is at 7."
    assert calls[0]["result"][0]["password"] == REDACTED

    # Training: the complaint becomes a memory commit.
    t0 = time.perf_counter()
    rc, out, err, _ = _evolve(
        ws,
        env,
        "text",
        "train",
        "--episodes",
        "2",
        "--recipe",
        "reflexion",
        "--unrendered",
        "--json",
    )
    train_s = time.perf_counter() - t0
    assert rc == 0, err
    log = subprocess.run(
        ["git", "log", "--format=%s%n%b%n--"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout
    assert "Evolve-Recipe: reflexion" in log and f"Evolve-Task: {task_id}" in log
    memory = "".join(p.read_text() for p in (ws / "memory").rglob("*.md"))
    assert "Sign off every text message" in memory
    train_log = next((ws / "generations" / "runs").glob("train-*.jsonl")).read_text()
    assert "sms_signoff" in train_log
    # The stream's history (no payment in a texting task) is on the side ref, one record an episode.
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "refs/evolve/train", "history/"],
        cwd=ws, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert len(names) == 1
    shown = subprocess.run(["git", "show", f"refs/evolve/train:{names[0]}"],
                           cwd=ws, capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert json.loads(shown)["episodes"] == {
        "0": {"payment": None, "task": task_id}, "1": {"payment": None, "task": task_id},
    }  # fmt: skip

    # The usual reading and undo commands work on an AppWorld workspace.
    rc, out, err, _ = _evolve(ws, env, "text", "log", "--json")
    assert rc == 0, err
    entries = json.loads(out)
    learned = [e for e in (entries if isinstance(entries, list) else entries["entries"])
               if "reflexion" in json.dumps(e)]  # fmt: skip
    assert learned
    rc, out, err, _ = _evolve(ws, env, "text", "revert", "HEAD", "--reason", "test", "--json")
    assert rc == 0, err
    rc, out, err, _ = _evolve(ws, env, "text", "report")
    assert rc == 0, err
    assert (ws / "generations" / "report" / "report.html").is_file()

    # `evolve appworld splits` rebuilds the same split file from the installed tasks.
    rc, out, err, _ = _evolve(ws, env, "text", "appworld", "splits", "--json")
    assert rc == 0, err
    assert json.loads(out)["splits"]["train"] == [task_id]

    # One task, in train: `evolve evolve` says in one sentence why no generation can be judged.
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout
    rc, out, err, _ = _evolve(ws, env, "text", "evolve", "--generations", "1")
    assert rc != 0
    assert "the evalset's dev and holdout splits are empty" in err
    assert "`evolve appworld splits`" in err and "Traceback" not in err
    assert not (ws / "generations" / "gen-0001.json").exists()
    assert (
        head
        == subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True, check=True
        ).stdout
    )
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout
    assert status == ""

    # No worker outlives the commands; AppWorld's own token-bearing logs were removed.
    assert _live_workers(root) == []
    assert not list((root / "experiments" / "outputs").glob("evolve-*"))

    # No token anywhere in the workspace; nothing of AppWorld in it or in the repository.
    for path in ws.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            assert "eyJ" not in path.read_text(errors="replace"), path
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [p for p in tracked if "api_docs" in p or p.endswith((".db", "specs.json"))]
    repo_files = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [
        p for p in repo_files if p.endswith(".db") or "/api_docs/" in p or "specs.json" in p
    ]
    print(f"idle run {idle_s:.1f} s, run {run_s:.1f} s, train (2 episodes) {train_s:.1f} s")
