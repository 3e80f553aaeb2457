"""The AppWorld worker's failure modes and the `evolve appworld` commands (need the venv)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from appworld_helpers import require_appworld

from evolve.cli._group import run
from evolve.envs import make_env
from evolve.envs.appworld import AppWorldError, WorkerClient
from evolve.workspace import init_workspace

pytestmark = [pytest.mark.appworld]


@pytest.fixture(autouse=True)
def _venv() -> None:
    require_appworld()


def test_a_hung_call_is_stopped_by_evolves_timeout(tmp_path: Path) -> None:
    client = WorkerClient(tmp_path)
    try:
        assert client.request("hello", timeout=120)["missing_apps"] == []
        pid = client.pid
        assert pid is not None
        started = time.perf_counter()
        with pytest.raises(AppWorldError, match=r"did not answer 'sleep' within 2 s; the worker"):
            client.request("sleep", timeout=2, seconds=600)
        assert time.perf_counter() - started < 30
        assert client.proc is None and not Path(f"/proc/{pid}").exists()
        with pytest.raises(AppWorldError, match="is not running"):
            client.request("hello")
    finally:
        client.stop()


def test_a_crashed_worker_is_one_sentence(tmp_path: Path) -> None:
    client = WorkerClient(tmp_path)
    try:
        client.request("hello", timeout=120)
        assert client.pid is not None
        os.kill(client.pid, signal.SIGKILL)
        with pytest.raises(AppWorldError, match=r"(exited during 'tasks'|worker died)"):
            client.request("tasks")
    finally:
        client.stop()


def test_an_error_inside_appworld_is_reported_not_raised_raw(tmp_path: Path) -> None:
    client = WorkerClient(tmp_path)
    try:
        with pytest.raises(AppWorldError, match=r"AppWorld refused 'call': RuntimeError: no world"):
            client.request("call", timeout=120, app="phone", api="login", args={})
        assert client.request("tasks")["tasks"] == {}  # the worker survives an error answer
    finally:
        client.stop()


def test_a_missing_app_is_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPWORLD_ROOT", str(tmp_path))
    ws = init_workspace(tmp_path / "ws", env="appworld")
    (ws.evalset_dir / "appworld.yaml").write_text("apps: [phone, no_such_app]\n")
    env = make_env("appworld", ws.evalset_dir)
    with pytest.raises(
        AppWorldError, match=r"lacks the app\(s\) no_such_app; run `evolve appworld"
    ):
        env.tasks("train")


def test_setup_is_idempotent_and_says_what_data_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("APPWORLD_ROOT", raising=False)
    home = Path(os.environ.get("EVOLVE_APPWORLD_HOME", Path.home() / ".cache/evolve/appworld"))
    root_file = home / "root"
    saved = root_file.read_text() if root_file.exists() else None
    try:
        assert run(["appworld", "setup", "--root", str(tmp_path), "--json"]) == 0
        out, err = capsys.readouterr()
        report = json.loads(out)
        assert "already installed" in err and "apps are unpacked" in err and "[3/3]" in err
        assert report["tasks"] == 0 and report["root"] == str(tmp_path.resolve())
        assert report["missing"].startswith(f"No AppWorld tasks under {tmp_path.resolve()}/data")
        assert report["missing"].count(". ") == 0  # one sentence
    finally:
        if saved is None:
            root_file.unlink(missing_ok=True)
        else:
            root_file.write_text(saved)
