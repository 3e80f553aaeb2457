"""The `ray` executor on a real local Ray cluster: the same seeded run as serial and no Ray
process left after the command; Ray missing or unreachable in one sentence; Ray never
imported by the other commands (see test_ray_cluster.py for the map itself).

Tests marked `ray` skip without Ray installed, except where CI=true or EVOLVE_REQUIRE_RAY=1,
where they fail (`.ci/run` installs the `ray` extra). The rest (Ray missing, a bad
RAY_ADDRESS, Ray never imported by other commands) run everywhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import run_cli
from evolve.executors._ray import import_ray
from evolve.workspace import Workspace


def _required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("EVOLVE_REQUIRE_RAY") == "1"


def need_ray() -> Any:
    """The `ray` module; skips without it, or fails where CI requires it."""
    try:
        import importlib

        return importlib.import_module("ray")
    except ImportError:
        message = "Ray is not installed (pip install 'evolve[ray]')"
        if _required():
            pytest.fail(f"{message}, but CI=true or EVOLVE_REQUIRE_RAY=1 requires it.")
        pytest.skip(f"{message}; set EVOLVE_REQUIRE_RAY=1 to make this fail")


def _run_log(root: Path, out: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    summary = json.loads(out)
    lines = (root / summary["log_dir"] / "episodes.jsonl").read_text().splitlines()
    episodes = [json.loads(line) for line in lines]
    for record in [summary, *summary["tasks"], *episodes]:
        record.pop("duration_s", None)
    summary.pop("log_dir")
    return summary, episodes


def _marked(mark: str) -> list[int]:
    """The processes whose environment holds `mark` (what the command started, and theirs)."""
    found = []
    needle = f"EVOLVE_TEST_MARK={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue  # gone, or not ours
    return found


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_a_seeded_sim_run_on_ray_is_the_serial_run_and_leaves_no_process(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    need_ray()
    code, out, err = run_cli(
        capsys, "run", "--split", "dev", "--runs", "2", "--concurrency", "3",
        "--executor", "serial", "--json",
    )  # fmt: skip
    assert code == 0, err
    serial = _run_log(ws.root, out)

    mark = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["EVOLVE_TEST_MARK"] = mark
    # Ray's session folder goes under TMPDIR (a short path: its socket names must fit).
    tmp = Path(tempfile.mkdtemp(prefix="evr-", dir="/tmp"))
    env["TMPDIR"] = str(tmp)
    done = subprocess.run(
        [sys.executable, "-m", "evolve", "run", "--split", "dev", "--runs", "2",
         "--concurrency", "3", "--executor", "ray", "--json"],
        cwd=ws.root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _run_log(ws.root, done.stdout) == serial
    # Ray's processes (GCS, raylet, workers) inherit the mark; none outlives the command.
    deadline = time.monotonic() + 20
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _marked(mark) == []
    leftovers = list(tmp.iterdir())
    shutil.rmtree(tmp, ignore_errors=True)
    assert leftovers == []  # the session's files went with it


def test_the_ray_executor_without_ray_is_one_sentence(
    ws: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--executor", "ray")
    assert code != 0 and out == ""
    assert err.strip() == (
        "error: the ray executor needs Ray, which is not installed; run "
        "`pip install 'evolve[ray]'` or choose another --executor."
    )
    assert list((ws.root / "generations").glob("runs/*")) == []  # nothing half-written


@pytest.mark.ray
def test_an_unreachable_ray_address_is_one_sentence_and_quick(
    ws: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    need_ray()
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    started = time.monotonic()
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--executor", "ray")
    assert time.monotonic() - started < 10
    assert code != 0 and out == ""
    assert err.strip().startswith(
        f"error: could not reach the Ray cluster at RAY_ADDRESS=127.0.0.1:{port} ("
    )
    assert err.strip().endswith("unset RAY_ADDRESS to start a local one.")
    assert len(err.strip().splitlines()) == 1
    assert not import_ray().is_initialized()


def _modules_after(argv: list[str], cwd: Path) -> set[str]:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        f"rc = main({argv!r})\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.rsplit("LOADED:", 1)[1].split())


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["log", "-n", "3"],
        ["run", "--split", "dev", "--concurrency", "4"],
        pytest.param(
            ["run", "--split", "dev", "--executor", "process", "--concurrency", "2"],
            marks=pytest.mark.slow,
        ),
    ],
)
def test_ray_is_imported_only_by_the_ray_executor(workspace: Workspace, argv: list[str]) -> None:
    loaded = _modules_after(argv, workspace.root)
    assert not {m for m in loaded if m == "ray" or m.startswith("ray.")}


@pytest.mark.ray
@pytest.mark.slow
def test_the_gate_scores_on_ray_and_judges_as_serial(
    workspace: Workspace, run_git: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_ray()
    from evolve.executors._ray import _ACTORS, RayExecutor
    from evolve.generations import evolve

    maps: list[int] = []
    real = RayExecutor.map

    def counted(self: RayExecutor, job: Any, items: Any, **kwargs: Any) -> Any:
        maps.append(len(items))
        return real(self, job, items, **kwargs)

    monkeypatch.setattr(RayExecutor, "map", counted)

    path = workspace.root / "evolve.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["gate"].update(train_episodes=0, runs=1)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run_git(workspace.root, "commit", "-q", "-am", "test: a quick gate")
    ws = Workspace(workspace.root)
    [serial] = evolve(ws, generations=1, dry_run=True, executor="serial").records
    [on_ray] = evolve(ws, generations=1, dry_run=True, executor="ray", concurrency=2).records
    keep = ("dev_base", "dev", "holdout_base", "holdout", "dev_gain", "verdict", "reason")
    assert {k: getattr(on_ray, k) for k in keep} == {k: getattr(serial, k) for k in keep}
    assert len(maps) == 4  # dev and holdout, base and candidate, all on Ray
    assert not import_ray().is_initialized() and not _ACTORS.owned  # one session, closed


def test_without_ray_the_ray_tests_skip_locally_and_fail_in_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    monkeypatch.delenv("EVOLVE_REQUIRE_RAY", raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true or EVOLVE_REQUIRE_RAY=1"):
        need_ray()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        need_ray()
    monkeypatch.setenv("EVOLVE_REQUIRE_RAY", "1")
    with pytest.raises(pytest.fail.Exception):
        need_ray()
