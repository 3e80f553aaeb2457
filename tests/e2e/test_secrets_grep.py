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
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import run_cli

PLANTS = Path(__file__).resolve().parent
pytestmark = pytest.mark.slow


def _git_objects(root: Path, skip: set[str]) -> dict[str, bytes]:
    """Every object of the repository, decompressed, by id (ids in `skip` left out)."""
    ids = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    ids = [i for i in ids if i not in skip]
    raw = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=root,
        input="\n".join(ids).encode() + b"\n",
        capture_output=True,
        check=True,
    ).stdout
    found: dict[str, bytes] = {}
    pos = 0
    while pos < len(raw):
        header_end = raw.index(b"\n", pos)
        sha, _kind, size = raw[pos:header_end].split()
        start = header_end + 1
        found[sha.decode()] = raw[start : start + int(size)]
        pos = start + int(size) + 1
    return found


def _blob_id(root: Path, path: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", f"HEAD:{path}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_no_secret_reaches_any_file_object_cache_output_or_request(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    run_git: object,
) -> None:
    import _secret_plants as plants  # noqa: PLC0415  (found through the path set below)

    from evolve._format._units import hand_id
    from evolve.workspace import init_workspace

    root = tmp_path / "ws"
    init_workspace(root)
    config = yaml.safe_load((root / "evolve.yaml").read_text(encoding="utf-8"))
    echo = "_secret_plants:echo_sim"
    config["environment"] = "_secret_plants:SecretWorld"
    config["models"].update(
        agent=echo, updater=echo, reflector=echo, evolver=echo, selector=echo, cache="write"
    )
    config["redact"] = {
        "values": [plants.IN_VALUES, plants.IN_TASK, plants.IN_NOTE],
        "env": [plants.ENV_NAME],
    }
    config["train"]["episodes"] = 6
    config["gate"].update(runs=1, bootstrap_samples=100, train_episodes=2, generations=1)
    config["skills"]["batch_size"] = 2
    (root / "evolve.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    note = "memory/alex/hand-note.md"
    (root / note).parent.mkdir(parents=True, exist_ok=True)
    (root / note).write_text(
        f"Always pay from the visa card; the gate code is {plants.IN_NOTE}.\n", encoding="utf-8"
    )
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "person: plant"], cwd=root, check=True)

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

    planted = {"evolve.yaml", note}
    found: list[str] = []

    def scan(where: str, data: bytes) -> None:
        for secret in plants.SECRETS:
            if secret.encode() in data:
                found.append(f"{secret} in {where}")

    files = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts]
    for path in files:
        if path.relative_to(root).as_posix() not in planted:
            scan(str(path.relative_to(root)), path.read_bytes())
    git_files = [p for p in (root / ".git").rglob("*") if p.is_file()]
    for path in git_files:  # refs, logs, journals, caches: objects are compressed, see below
        if path.name == "evolve-config.cache":  # what is read of evolve.yaml, by its bytes:
            listed = (plants.IN_VALUES, plants.IN_TASK, plants.IN_NOTE)  # as evolve.yaml
            data = path.read_bytes()
            for value in listed:
                data = data.replace(value.encode(), b"")
            scan(str(path.relative_to(root)), data)  # never a value from the environment
        else:
            scan(str(path.relative_to(root)), path.read_bytes())
    objects = _git_objects(root, {_blob_id(root, p) for p in planted})
    for sha, body in objects.items():
        scan(f"git object {sha}", body)
    cached = [p for p in cache.rglob("*") if p.is_file()]
    for path in cached:
        scan(str(path), path.read_bytes())
    scan("report.html", (tmp_path / "report" / "report.html").read_bytes())
    for i, text in enumerate(outputs):
        scan(f"command output {i}", text.encode())
    requests = [json.loads(line) for line in capture.read_text(encoding="utf-8").splitlines()]
    roles = {r["schema"] for r in requests}
    for i, request in enumerate(requests):
        for role, content in request["messages"]:
            if request["schema"] == "agent_action" and role != "system":
                continue  # the agent's own task turn: it needs the task's arguments
            scan(f"request {i} ({request['schema']}, {role})", content.encode())

    print(
        f"secrets found: {len(found)}; scanned {len(files)} workspace files, {len(git_files)} "
        f"files under .git/, {len(objects)} git objects, {len(cached)} cache files, the "
        f"report, {len(outputs)} outputs, {len(requests)} requests ({sorted(roles)})"
    )
    assert {"agent_action", "ace_deltas", "reflector_edits", "skill_evolve"} <= roles
    assert {"skill_reflection", "skill_selection"} <= roles
    assert len(cached) > 50
    assert not found, f"{len(found)} secrets found, e.g. {found[:12]}"
