"""The sandbox under attack (issue 26 item 5, at the sandbox's level): each program is refused
or contained, and the outcome says which limit stopped it."""

from __future__ import annotations

import errno
import hashlib
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import evolve.sandbox._run as sandbox_run
from evolve import sandbox
from evolve.sandbox import Limits

PY = sys.executable
needs_bwrap = pytest.mark.skipif(
    not sandbox.bwrap_works(),
    reason="bubblewrap is not installed or may not create namespaces here (CI installs it)",
)
needs_unshare = pytest.mark.skipif(
    not sandbox.unshare_works(), reason="unshare may not create user namespaces here"
)


def _py(code: str, **kwargs: object) -> sandbox.Outcome:
    return sandbox.run([PY, "-c", code], **kwargs)  # type: ignore[arg-type]


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes() if path.is_file() else b"<dir>")
    return h.hexdigest()


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The sandbox's folders made under `tmp_path/sandboxes` (checked empty afterwards)."""
    base = tmp_path / "sandboxes"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    yield base
    assert list(base.iterdir()) == [], "the sandbox's folder was left behind"


@pytest.fixture
def workspace_copy(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "evalset").mkdir(parents=True)
    (root / "evalset" / "tasks.yaml").write_text("tasks: [1, 2, 3]\n", encoding="utf-8")
    (root / "memory").mkdir()
    (root / "memory" / "a.md").write_text("a unit\n", encoding="utf-8")
    return root


def test_an_api_key_not_on_the_allow_list_does_not_reach_the_program(
    monkeypatch: pytest.MonkeyPatch, own_tmp: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-not-for-the-program-4711")
    monkeypatch.setenv("MY_ALLOWED", "visible")
    code = "import os; print(os.environ.get('OPENAI_API_KEY')); print(sorted(os.environ))"
    out = _py(code, env_allow=("MY_ALLOWED",))
    assert out.ok, out
    text = out.stdout.decode()
    assert "sk-secret" not in text and text.splitlines()[0] == "None"
    assert "MY_ALLOWED" in text and "OPENAI_API_KEY" not in text.splitlines()[1]
    out = _py("import os; print(os.environ['MY_ALLOWED'])", env_allow=("MY_ALLOWED",))
    assert out.stdout == b"visible\n"


CONNECT = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect((sys.argv[1], int(sys.argv[2])))
    print("connected")
except OSError as exc:
    print("refused", exc.errno)
"""


@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=needs_bwrap),
                                     pytest.param("unshare", marks=needs_unshare)])  # fmt: skip
def test_no_network_a_listener_on_the_hosts_loopback_is_out_of_reach(
    backend: sandbox.Backend, own_tmp: Path
) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        out = sandbox.run([PY, "-c", CONNECT, "127.0.0.1", str(port)], backend=backend)
        assert out.ok, out
        assert out.stdout.decode().startswith("refused"), out.stdout
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()


@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=needs_bwrap),
                                     pytest.param("unshare", marks=needs_unshare)])  # fmt: skip
def test_no_network_a_public_address_is_unreachable(
    backend: sandbox.Backend, own_tmp: Path
) -> None:
    out = sandbox.run([PY, "-c", CONNECT, "1.1.1.1", "443"], backend=backend)
    assert out.ok, out
    said = out.stdout.decode().split()
    assert said[0] == "refused" and int(said[1]) == errno.ENETUNREACH, said


@needs_bwrap
def test_writes_outside_the_copy_are_refused_and_the_workspace_is_unchanged(
    workspace_copy: Path, own_tmp: Path, tmp_path: Path
) -> None:
    before = _digest(workspace_copy)
    real = workspace_copy / "evalset" / "tasks.yaml"
    code = f"""
import os
open('evalset/tasks.yaml', 'w').write('tasks: []')      # its own copy: allowed
results = []
for path in [{str(real)!r}, {str(tmp_path / "escaped.txt")!r}, '/etc/evolve-escape',
             os.path.expanduser('~/../../escape')]:
    try:
        open(path, 'w').write('pwned')
        results.append('wrote ' + path)
    except OSError as exc:
        results.append('refused ' + type(exc).__name__)
print(open('evalset/tasks.yaml').read())
print('\\n'.join(results))
"""
    seen: list[str] = []
    out = _py(code, workdir=workspace_copy,
              inspect=lambda root: seen.extend(sorted(os.listdir(root))))  # fmt: skip
    assert out.ok, out
    lines = out.stdout.decode().splitlines()
    assert lines[0] == "tasks: []"  # the copy was the program's to change
    # The real workspace is not there to write; the root is read-only. What it "wrote" under
    # /tmp went to the sandbox's own /tmp, which is thrown away with it.
    assert lines[1] == "refused FileNotFoundError" and lines[3] == "refused OSError", lines
    assert _digest(workspace_copy) == before
    assert not (tmp_path / "escaped.txt").exists() and not Path("/etc/evolve-escape").exists()
    assert "work" in seen


@needs_bwrap
def test_the_real_evalset_is_not_even_visible(workspace_copy: Path, own_tmp: Path) -> None:
    before = _digest(workspace_copy)
    code = f"import os; print(os.path.exists({str(workspace_copy / 'evalset')!r}))"
    out = _py(code, workdir=workspace_copy)
    assert out.stdout == b"False\n"
    assert _digest(workspace_copy) == before


MARK = "evolve-fork-bomb-" + os.urandom(4).hex()


def _marked() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if MARK.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


# As root without a pids cgroup nothing in the kernel refuses the fork: the bomb could take the
# machine's process ids (and every other test's) before the watch stops it.
kernel_holds_fork = pytest.mark.skipif(
    sandbox.process_limit() == "watch",
    reason="root without a pids cgroup: nothing in the kernel would stop a fork bomb here",
)


@kernel_holds_fork
@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=needs_bwrap), "rlimits"])
def test_a_fork_bomb_is_stopped_and_leaves_no_process(
    backend: sandbox.Backend, own_tmp: Path
) -> None:
    code = f"""
import os, time
# {MARK}
while True:
    try:
        os.fork()
    except OSError:
        pass
    time.sleep(0.002)
"""
    out = _py(code, backend=backend, limits=Limits(processes=16, wall_s=20))
    # Stopped by the process count (as root, whom RLIMIT_NPROC does not bind) or, when the
    # limit made fork fail and the program spun on, by the wall clock.
    assert out.limit in ("processes", "wall"), out
    assert out.returncode is None and not out.ok
    assert _marked() == []


def test_a_10_gb_allocation_is_refused(own_tmp: Path) -> None:
    out = _py("x = bytearray(10 * 1024**3); print('allocated')",
              limits=Limits(memory_bytes=1024**3))  # fmt: skip
    assert out.stdout == b"" and out.returncode == 1
    assert out.limit == "memory" and "memory" in out.reason()


def test_sleeping_forever_is_stopped_at_the_wall_clock_limit(own_tmp: Path) -> None:
    out = _py("import time; print('sleeping', flush=True); time.sleep(10**6)",
              limits=Limits(wall_s=2))  # fmt: skip
    assert out.limit == "wall" and out.returncode is None
    assert out.stdout == b"sleeping\n"  # what it printed before is kept
    assert 2 <= out.duration_s < 60
    assert "wall-clock" in out.reason()


def test_output_past_its_cap_is_cut_and_the_program_stopped(own_tmp: Path) -> None:
    code = "import sys\nwhile True: sys.stdout.buffer.write(b'x' * 65536)"
    out = _py(code, limits=Limits(stdout_bytes=1024**2))
    assert out.limit == "stdout" and len(out.stdout) == 1024**2


def test_cpu_time_is_limited(own_tmp: Path) -> None:
    out = _py("while True: pass", limits=Limits(cpu_s=1, wall_s=120))
    assert out.limit == "cpu", out


def test_a_file_past_the_size_limit_is_refused(own_tmp: Path) -> None:
    out = _py("open('big', 'wb').write(b'x' * 2 * 1024**2)", limits=Limits(file_bytes=1024**2))
    assert out.limit == "file_size", out


def test_the_weak_fallback_says_so_once_and_in_its_result(
    own_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox_run._warned.clear()
    first = _py("print('hi')", backend="rlimits")
    second = _py("print('hi')", backend="rlimits")
    assert first.ok and first.weak and first.backend == "rlimits"
    assert first.warnings == (sandbox.WEAK_WARNING,) and second.weak
    err = capsys.readouterr().err
    assert err.count("warning: no bubblewrap") == 1


@needs_bwrap
def test_bubblewrap_is_chosen_when_it_works(own_tmp: Path) -> None:
    out = _py("print('hi')")
    assert out.backend == "bwrap" and not out.weak and out.warnings == ()


def test_limits_must_be_finite_and_positive() -> None:
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="wall_s"):
            Limits(wall_s=bad)
