"""Builders for what tests plant: memory units, skill units, hand-written skill files, and the
skills batch's candidates and maker; and a counter of the full unit parser's calls.

One definition each, so a field the unit model gains is added here once. A test that needs
other values passes them (`memory_unit("u-1", "text", created_episode=0)`); every extra keyword is a
unit field.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import os
import re
import socket
import subprocess
import sys
import sysconfig
import time
import venv
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from evolve.memory import MemoryUnit
from evolve.ops import Op
from evolve.skills import Candidate, Maker, specifics
from evolve.workspace import Workspace

ALEX = "user:alex"  # the default persona's scope
APPS = ("venmo", "phone", "gmail", "simple_note")
# A general skill's trigger that matches every task that writes.
WRITE_TRIGGER = "a task that changes stored state (send, pay, text, email, save, note)"


def memory_unit(
    uid: str = "u-1",
    text: str = "",
    *,
    recipe: str = "ace",
    kind: str = "bullet",
    scope: str = ALEX,
    **fields: Any,
) -> MemoryUnit:
    """A validated unit: an ace bullet in alex's scope unless told otherwise (`id=` in
    `fields` overrides `uid`)."""
    return MemoryUnit.model_validate(
        {"id": uid, "recipe": recipe, "kind": kind, "scope": scope, "text": text, **fields}
    )


def skill(
    ident: str,
    text: str,
    topic: str | None = None,
    *,
    recipe: str = "skills",
    status: str = "active",
    trigger: str = "a task",
    evidence: Sequence[str] | None = ("episode 0 (seed-0)",),
    **fields: Any,
) -> MemoryUnit:
    """A global skill on `topic`'s shelf (the general shelf without one), learned in episode 0
    unless `evidence` says otherwise (None: no evidence field)."""
    return MemoryUnit.model_validate(
        {
            "id": ident,
            "recipe": recipe,
            "kind": "skill",
            "status": status,
            "scope": "global",
            "shelf": "topic" if topic else "general",
            "topic": topic,
            "trigger": trigger,
            "evidence": None if evidence is None else list(evidence),
            "valid_from": "2026-01-01T00:00:00+00:00",
            "text": text,
            **fields,
        }
    )


def shelf_skill(
    ident: str, text: str, topic: str | None = None, *, evidence: list[str] | None = None
) -> MemoryUnit:
    """An active skill as the sidecar and revert-record tests plant it through the applier:
    its trigger names its topic (`a venmo task`, `a write task` on the general shelf), and it
    carries `evidence` only when given."""
    return skill(ident, text, topic, trigger=f"a {topic or 'write'} task", evidence=evidence)


def skill_file(
    ident: str, lesson: str, trigger: str, *, scope: str = "global", topic: str | None = None
) -> str:
    """A hand-written skill file (`recipe: hand`) with every field written out, on the general
    shelf or `topic`'s."""
    shelf = f"shelf: topic\ntopic: {topic}\n" if topic else "shelf: general\n"
    return (
        f"---\nid: {ident}\nrecipe: hand\nkind: skill\nstatus: active\nscope: {scope}\n"
        f"{shelf}trigger: {trigger}\n---\n{lesson}\n"
    )


# `memory/skills/general/verify-after.md` as the CLI, report and real-server tests plant it.
VERIFY_AFTER = skill_file(
    "verify-after",
    "Verify the final state after writing: read it back.",
    "sending a text, payment or email, or saving a note",
)


def candidate(
    ref: str,
    topic: str,
    lesson: str,
    *,
    episode: int = 1,
    task_id: str = "pay_back-1",
    instruction: str = "Pay Jamie Lee back $12.50 on Venmo for lunch.",
    actions: str = "",
) -> Candidate:
    """A skill reflector's candidate lesson from one failed episode."""
    return Candidate(
        ref=ref,
        episode=episode,
        task_id=task_id,
        topic=topic,
        lesson=lesson,
        trigger=f"a {topic} task",
        evidence="the verifier said no",
        scope_hint="topic",
        task=specifics(task_id, instruction, actions, APPS),
    )


def maker(batch: int = 0, status: str = "active") -> Maker:
    """Who makes a skills batch's units: the stream, batch, episode and time they record."""
    return Maker(
        stream="alex/skills/0/instance",
        batch=batch,
        episode=batch * 4 + 3,
        now="2026-02-01T00:00:00+00:00",
        status=status,  # type: ignore[arg-type]
    )


def count_full_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths `evolve.memory.parse_unit` (the full YAML and pydantic parser) is called with
    from now on, in order: how the units-cache tests see what the fast path parsed. Files
    written just now count as old, so the cache may keep them."""
    import evolve.memory
    from evolve.quick import _read

    monkeypatch.setattr(_read, "RACY_NS", -(10**12))
    calls: list[str] = []
    real = evolve.memory.parse_unit

    def counting(path: str, raw: str) -> MemoryUnit:
        calls.append(path)
        return real(path, raw)

    monkeypatch.setattr(evolve.memory, "parse_unit", counting)
    return calls


def plugin_wheel(folder: Path, package: str, source: str, entry_points: str) -> Path:
    """A wheel of the one-module package `package` (a wheel is a zip with its metadata: no
    build backend is needed), holding `source` as its `__init__.py` and `entry_points`."""
    dist = f"{package}-0.1.dist-info"
    files = {
        f"{package}/__init__.py": source,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {package.replace('_', '-')}\n"
        "Version: 0.1\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{dist}/entry_points.txt": entry_points,
    }
    record = []
    for name, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    path = folder / f"{package}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
        wheel.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    return path


def venv_with_plugin(root: Path, wheel: Path) -> Path:
    """The python of a new venv under `root` that sees this evolve (and its dependencies)
    through a .pth file, with `wheel` installed by pip, offline."""
    import evolve

    venv.create(root / "venv", with_pip=False)
    python = root / "venv" / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    deps = sysconfig.get_paths()["purelib"]  # evolve's dependencies (and evolve, installed)
    ours = str(Path(evolve.__file__).parent.parent)  # the evolve under test, first
    Path(site, "evolve_here.pth").write_text(
        f"import sys, site; site.addsitedir({deps!r}); sys.path.insert(0, {ours!r})\n",
        encoding="utf-8",
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", "--no-build-isolation", str(wheel)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return python


def evolve_with(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m evolve ARGS` in `cwd`, with no EVOLVE_* or COLUMNS setting and no API key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVOLVE_", "COLUMNS"))}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run(
        [python, "-m", "evolve", *args], cwd=cwd, capture_output=True, text=True, env=env
    )


def commit_episode(
    ws: Workspace,
    k: int,
    ops: Sequence[Op],
    recipe: str = "reflexion",
    complaint: str = "a complaint",
) -> str:
    """Training episode `k` of alex that applies `ops` through the applier and commits them
    with a training episode's trailers; its commit."""
    from evolve.applier import MemoryApplier
    from evolve.memory import load_units
    from evolve.store import EPISODE, KIND, OPS, PERSONA, RECIPE, TASK, format_ops

    applier = MemoryApplier(ws, "user:alex")
    result = applier.apply(ops, load_units(ws.root))
    assert not result.refused, result.refused
    sha = ws.store.commit(
        result.paths,
        f"{recipe}: episode {k} (pay_back-1)",
        body=f"Complaint:\n  {complaint}",
        trailers=[
            (EPISODE, str(k)),
            (RECIPE, recipe),
            (TASK, "pay_back-1"),
            (OPS, format_ops((op.op, op.id) for op in result.applied)),
            (PERSONA, "alex"),
            (KIND, "train"),
        ],
    )
    applier.done()
    assert sha is not None
    return sha


def reflection(i: int) -> MemoryUnit:
    """Reflexion unit `reflexion-r<i>`, learned at second `i` of the first of January."""
    return memory_unit(
        f"reflexion-r{i}",
        f"Reflection number {i} about a different preference.",
        recipe="reflexion",
        kind="reflection",
        created_episode=0,
        valid_from=f"2026-01-01T00:00:{i:02d}.000000+00:00",
    )


@dataclasses.dataclass
class LlamaServer:
    """A llama.cpp server the real-server tests started (SmolLM2, named `smollm2`)."""

    base_url: str
    log: Path

    def statuses(self) -> list[int]:
        """HTTP statuses of the chat requests, from the server's access log."""
        text = self.log.read_text(errors="replace")
        return [int(s) for s in re.findall(r'"POST /v1/chat/completions HTTP/1.1" (\d{3})', text)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server(
    folder: Path, *, n_ctx: int | None = 8192, ready_s: float = 120.0
) -> Iterator[LlamaServer]:
    """A llama.cpp server with SmolLM2 on a free port (`n_ctx` None: llama.cpp's default
    window), logging to `folder/server.log`, stopped on exit. Skipped when CI's server is not
    prepared (`eval "$(bash .ci/llama_server.sh)"`), failed instead where it is required (CI,
    or EVOLVE_REQUIRE_REAL_SERVER=1)."""
    import httpx

    python, gguf = os.environ.get("EVOLVE_LLAMA_PYTHON"), os.environ.get("EVOLVE_LLAMA_GGUF")
    if not python or not gguf:
        message = (
            "EVOLVE_LLAMA_PYTHON and EVOLVE_LLAMA_GGUF are not set; run "
            'eval "$(bash .ci/llama_server.sh)" first.'
        )
        if os.environ.get("CI") == "true" or os.environ.get("EVOLVE_REQUIRE_REAL_SERVER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    port = _free_port()
    log = folder / "server.log"
    command = [
        python, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port),
        *(["--n_ctx", str(n_ctx)] if n_ctx is not None else []),
        # One thread: on a small shared machine llama.cpp's spinning threads fight the other
        # processes for the cores (measured: 18x slower with two threads under load).
        "--n_threads", "1", "--n_threads_batch", "1",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if process.poll() is not None:
                tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
                pytest.fail(f"the llama.cpp server exited early: {tail}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the llama.cpp server was not ready in {ready_s:.0f} s.")
            time.sleep(0.25)
        yield LlamaServer(base_url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


TWIN_TEXT = "Set my Venmo payments to friends-only visibility."
TWIN_ACTIVE, TWIN_PENDING = "ace-aaaaaaaaaa", "ace-bbbbbbbbbb"


def twins_after_a_merge(ws: Workspace, run: Any) -> str:
    """Two learners learned TWIN_TEXT as two units: TWIN_ACTIVE here, TWIN_PENDING (pending,
    as under `review: true`) on another branch, merged by evolve; returns the commit that
    taught TWIN_ACTIVE. `run` is the `run_git` fixture."""
    from evolve.merge import merge_branch

    run(ws.root, "checkout", "--quiet", "-b", "other")
    pending = memory_unit(TWIN_PENDING, TWIN_TEXT, status="pending", created_episode=0)
    commit_episode(ws, 0, [Op(op="add", unit=pending)], "ace")
    run(ws.root, "checkout", "--quiet", "main")
    taught = commit_episode(ws, 0, [Op(op="add", unit=memory_unit(TWIN_ACTIVE, TWIN_TEXT))], "ace")
    assert merge_branch(ws, "other").status == "merged"
    return taught
