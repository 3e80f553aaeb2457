"""`evolve run` survives a slow or failing model (issue 22): a request that times out is
retried; an episode whose request still fails is recorded as failed, the run goes on, keeps
what it did, and says how many failed (text and --json)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from chatstub import Answer, ChatStub, chat_stub, stub_cache  # noqa: F401  (autouse)
from conftest import GitRunner, one_sentence, run_cli
from evolve.workspace import Workspace

MODEL = "openai/stub"


@pytest.fixture
def small(ws: Workspace, run_git: GitRunner, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """Three dev tasks, two turns, a half-second timeout, one try unless a test says more."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name in ("EVOLVE_MODEL", "EVOLVE_UPDATER_MODEL", "EVOLVE_REFLECTOR_MODEL", "EVOLVE_CACHE"):
        monkeypatch.delenv(name, raising=False)
    config = ws.root / "evolve.yaml"
    data = yaml.safe_load(config.read_text())
    data["agent"]["max_turns"] = 2
    data["models"]["timeout_s"] = 0.5
    data["models"]["retry"] = {"attempts": 1, "backoff_s": 0.01}
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    splits = ws.evalset_dir / "splits.yaml"
    data = yaml.safe_load(splits.read_text())
    data["dev"] = data["dev"][:3]
    splits.write_text(yaml.safe_dump(data, sort_keys=False))
    run_git(ws.root, "commit", "-qam", "small settings")
    return ws


def _attempts(ws: Workspace, run_git: GitRunner, n: int) -> None:
    config = ws.root / "evolve.yaml"
    data = yaml.safe_load(config.read_text())
    data["models"]["retry"]["attempts"] = n
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_git(ws.root, "commit", "-qam", f"{n} tries")


def _slow_first(n: int, body: dict[str, Any]) -> Answer:
    return Answer(delay=1.5 if n == 0 else 0.0)


def _slow_third(n: int, body: dict[str, Any]) -> Answer:
    # Requests 0 and 1 are the first episode's two turns: the second episode's first is slow.
    return Answer(delay=1.5 if n == 2 else 0.0)


def _run(capsys: pytest.CaptureFixture[str], stub: ChatStub, monkeypatch: Any, *extra: str) -> Any:
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    return run_cli(capsys, "run", "--split", "dev", "--model", MODEL, *extra)


def test_an_episode_whose_request_times_out_fails_and_the_run_goes_on(
    small: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with chat_stub(_slow_third) as stub:
        code, out, err = _run(capsys, stub, monkeypatch, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["episodes"] == 3 and report["failed_episodes"] == 1
    failed = [t for t in report["tasks"] if t["model_error"]]
    assert len(failed) == 1 and "did not answer in time" in failed[0]["model_error"]
    assert not failed[0]["accepted"]
    summary = json.loads((small.root / report["log_dir"] / "summary.json").read_text())
    assert summary["failed_episodes"] == 1
    lines = (small.root / report["log_dir"] / "episodes.jsonl").read_text().splitlines()
    assert sum(json.loads(line)["model_error"] is not None for line in lines) == 1


def test_the_text_report_says_how_many_failed(
    small: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with chat_stub(_slow_third) as stub:
        code, out, err = _run(capsys, stub, monkeypatch)
    assert code == 0, err
    assert "1 of 3 episodes failed" in " ".join(out.split())


def test_a_request_that_times_out_once_is_retried_and_nothing_fails(
    small: Workspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_git: GitRunner,
) -> None:
    _attempts(small, run_git, 2)
    with chat_stub(_slow_first) as stub:
        code, out, err = _run(capsys, stub, monkeypatch, "--json")
        asked = len(stub.chats)
    assert code == 0, err
    report = json.loads(out)
    assert report["failed_episodes"] == 0 and report["episodes"] == 3
    assert asked == 3 * 2 + 1  # two turns each, and the one request sent again


def test_a_model_that_never_answered_is_one_sentence_and_nothing_is_written(
    small: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def busy(n: int, body: dict[str, Any]) -> Answer:
        return Answer(status=503, body={"error": {"message": "overloaded"}})

    with chat_stub(busy) as stub:
        code, out, err = _run(capsys, stub, monkeypatch, "--json")
        asked = len(stub.chats)
    assert code != 0
    line = one_sentence(err)
    assert "503" in line and "overloaded" in line
    assert asked == 1  # the first episode's one try: no other episode was started
    assert not (small.root / "generations" / "runs").exists()


def test_a_server_that_goes_down_fails_the_rest_without_ending_the_run(
    small: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def down_after_two(n: int, body: dict[str, Any]) -> Answer:
        if n < 2:
            return Answer()
        return Answer(status=503, body={"error": {"message": "overloaded"}})

    with chat_stub(down_after_two) as stub:
        code, out, err = _run(capsys, stub, monkeypatch, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["failed_episodes"] == 2 and report["episodes"] == 3
