"""Against the real llama.cpp server (issue 22): started with its defaults (a 2,048-token
window), `evolve run --split dev` fits or refuses within 5 seconds, in one sentence naming
the setting; with a working window, a request made to time out once is retried and the run
completes. Same server and markers as `test_real_server.py` (CI prepares it)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import yaml
from llm_cache_isolation import private_cache  # noqa: F401  (autouse)
from test_real_server import MODEL, READY_TIMEOUT_S, Server, server, small_ws

from conftest import GitRunner, one_sentence, run_cli
from evolve.workspace import Workspace
from factories import llama_server

pytestmark = pytest.mark.real_server
__all__ = ["server", "small_ws"]  # the fixtures, from test_real_server


@pytest.fixture(scope="module")
def default_server(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A second server, started with llama.cpp's defaults (no --n_ctx: 2,048 tokens)."""
    folder = tmp_path_factory.mktemp("llama-default")
    with llama_server(folder, n_ctx=None, ready_s=READY_TIMEOUT_S) as started:
        yield started


def _default_bounds(ws: Workspace, run_git: GitRunner, note_chars: int = 0) -> None:
    """The default reply bounds (the agent's 512 tokens), and a hand-written prompt file of
    `note_chars` characters (a workspace whose prompts outgrow the default window)."""
    config = ws.root / "evolve.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["models"].pop("max_tokens", None)
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    if note_chars:
        line = "Always check the recipient's name against the contact list before paying. "
        text = (line * (note_chars // len(line) + 1))[:note_chars]
        (ws.root / "prompts" / "house-rules.md").write_text(text + "\n", encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "default reply bounds")


def _run_timed(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str, float]:
    started = time.monotonic()
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--model", MODEL, "--json")
    return code, out, err, time.monotonic() - started


def test_a_prompt_that_fits_the_default_window_runs_to_its_end(
    small_ws: Workspace,
    default_server: Server,
    run_git: GitRunner,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _default_bounds(small_ws, run_git)
    monkeypatch.setenv("OPENAI_BASE_URL", default_server.base_url)
    code, out, err, _ = _run_timed(capsys)
    assert code == 0, err  # fitted: no HTTP 400, the run completed and kept its summary
    report = json.loads(out)
    assert report["episodes"] == 2 and report["failed_episodes"] == 0
    assert (small_ws.root / report["log_dir"] / "summary.json").is_file()
    assert " 400 " not in default_server.log.read_text(encoding="utf-8", errors="replace")


def test_a_prompt_that_cannot_fit_the_default_window_is_refused_in_seconds(
    small_ws: Workspace,
    default_server: Server,
    run_git: GitRunner,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The case: a prompt of 2,116 tokens and a reply of 512, in a 2,048-token window.
    _default_bounds(small_ws, run_git, note_chars=9000)
    monkeypatch.setenv("OPENAI_BASE_URL", default_server.base_url)
    code, out, err, took = _run_timed(capsys)
    assert code != 0, out
    assert took < 5.0, f"refused after {took:.1f} s"
    sentence = one_sentence(err)
    assert "context window" in sentence and "--n_ctx" in sentence, sentence
    runs = small_ws.root / "generations" / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # nothing half-written


class _OnceSlow:
    """A proxy in front of the real server that holds the first chat request past the
    client's timeout (answering nothing), then forwards every request as it is."""

    def __init__(self, target: str, hold_s: float) -> None:
        self.target, self.hold_s = target.rstrip("/"), hold_s
        self.chats = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self, method: str, body: bytes | None) -> None:
                url = proxy.target + self.path.removeprefix("/v1")
                answer = httpx.request(
                    method, url, content=body, headers={"content-type": "application/json"},
                    timeout=600,
                )  # fmt: skip
                data = answer.content
                try:
                    self.send_response(answer.status_code)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            def do_GET(self) -> None:  # noqa: N802
                self._forward("GET", None)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with proxy.lock:
                    proxy.chats += 1
                    first = proxy.chats == 1
                if first:
                    # Sent on (it warms the server's prompt cache), but answered after the
                    # client has given up: the client sees a timeout.
                    started = time.monotonic()
                    with contextlib.suppress(httpx.HTTPError):
                        httpx.post(
                            proxy.target + self.path.removeprefix("/v1"), content=body,
                            headers={"content-type": "application/json"}, timeout=600,
                        )  # fmt: skip
                    time.sleep(max(0.0, proxy.hold_s - (time.monotonic() - started)))
                    return
                self._forward("POST", body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_request_that_times_out_once_is_retried_and_the_run_completes(
    small_ws: Workspace,
    server: Server,
    run_git: GitRunner,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = small_ws.root / "evolve.yaml"
    data = yaml.safe_load(config.read_text())
    # Long enough for SmolLM on a loaded machine; the held request waits a second longer.
    data["models"]["timeout_s"] = 60
    data["models"]["retry"] = {"attempts": 3, "backoff_s": 0.1}
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    run_git(small_ws.root, "commit", "-qam", "a short timeout")
    proxy = _OnceSlow(server.base_url.removesuffix("/v1") + "/v1", hold_s=61)
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", proxy.base_url)
        code, out, err = run_cli(capsys, "run", "--split", "dev", "--model", MODEL, "--json")
    finally:
        proxy.close()
    assert code == 0, err
    report = json.loads(out)
    assert report["episodes"] == 2 and report["failed_episodes"] == 0, report
    assert proxy.chats >= 2 + 1  # the held request, sent again, and the others
    assert all(t["model_error"] is None for t in report["tasks"]), report["tasks"]
