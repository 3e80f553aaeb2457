"""Secrets by value everywhere, for `evolve compare` (issue 28, item 3): the grep test of
`test_secrets_grep.py` over an experiment.

The same plants (secrets in the task instructions, in every model reply, in a hand note, in
`redact.values`, in a variable named by `redact.env` and in OPENAI_API_KEY), then a tiny
experiment runs with the sim models (`evolve compare`, then `--plan`, `--json`, and the report
that shows its results), and everything is grepped for every secret: each file under the
workspace (the experiment's results folder included), every git object decompressed (the
arms' refs hold their training commits), the request cache, the report, each command's output
and each request sent to a model other than the agent's own task turn. Only evolve.yaml
(which lists the secrets) and the hand note are exempt.
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

EXPERIMENT = """\
name: secrets
personas: [alex]
feedback: [instance]
orders: [0]
eval_seeds: [0]
episodes: 4
splits: [dev]
bootstrap_samples: 100
arms:
  none: {}
  oracle: {}
  fixed: {type: fixed, match: ace}
  ace: {}
  reflexion: {caps: {units: 3}}
"""


def _git_objects(root: Path, skip: set[str]) -> dict[str, bytes]:
    """Every object of the repository, decompressed, by id (ids in `skip` left out)."""
    ids = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    ids = [i for i in ids if i not in skip]
    raw = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=root, input="\n".join(ids).encode() + b"\n",
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    found: dict[str, bytes] = {}
    pos = 0
    while pos < len(raw):
        header_end = raw.index(b"\n", pos)
        sha, _kind, size = raw[pos:header_end].split()
        start = header_end + 1
        found[sha.decode()] = raw[start : start + int(size)]
        pos = start + int(size) + 1
    return found


def test_no_secret_reaches_anything_a_compare_writes_or_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import _secret_plants as plants  # noqa: PLC0415  (found through the path set below)

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
    (root / "evolve.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    note = "memory/alex/hand-note.md"
    (root / note).parent.mkdir(parents=True, exist_ok=True)
    (root / note).write_text(
        f"Always pay from the visa card; the gate code is {plants.IN_NOTE}.\n", encoding="utf-8"
    )
    experiment = root / "experiments" / "secrets.yaml"
    experiment.parent.mkdir(parents=True, exist_ok=True)
    experiment.write_text(EXPERIMENT, encoding="utf-8")
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

    evolve("compare", "experiments/secrets.yaml", "--plan")
    evolve("compare", "experiments/secrets.yaml", "--jobs", "1")
    doc = json.loads(evolve("compare", "experiments/secrets.yaml", "--jobs", "1", "--json"))
    evolve("report", "--out", str(tmp_path / "report"))

    arms = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/evolve/arms"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert arms, "compare trained no arm: the test would prove nothing"
    assert doc, "compare printed no results"

    planted = {"evolve.yaml", note}
    found: list[str] = []

    def scan(where: str, data: bytes) -> None:
        for secret in plants.SECRETS:
            if secret.encode() in data:
                found.append(f"{secret} in {where}")

    files = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts]
    results = [p for p in files if "experiments" in p.relative_to(root).parts[:2]]
    assert any(p.suffix in (".json", ".jsonl") for p in results), sorted(map(str, results))
    for path in files:
        if path.relative_to(root).as_posix() not in planted:
            scan(str(path.relative_to(root)), path.read_bytes())
    git_files = [p for p in (root / ".git").rglob("*") if p.is_file()]
    for path in git_files:
        if path.name == "evolve-config.cache":  # what is read of evolve.yaml, by its bytes
            data = path.read_bytes()
            for value in (plants.IN_VALUES, plants.IN_TASK, plants.IN_NOTE):
                data = data.replace(value.encode(), b"")
            scan(str(path.relative_to(root)), data)
        else:
            scan(str(path.relative_to(root)), path.read_bytes())
    skip = {
        subprocess.run(
            ["git", "rev-parse", f"HEAD:{p}"], cwd=root, capture_output=True, text=True,
            check=True,
        ).stdout.strip()
        for p in planted
    }  # fmt: skip
    objects = _git_objects(root, skip)
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
        f"secrets found: {len(found)}; scanned {len(files)} workspace files ({len(results)} "
        f"experiment results), {len(git_files)} files under .git/, {len(objects)} git objects "
        f"({len(arms)} arm refs), {len(cached)} cache files, the report, {len(outputs)} "
        f"outputs, {len(requests)} requests ({sorted(roles)})"
    )
    assert {"agent_action", "ace_deltas"} <= roles
    assert cached
    assert not found, f"{len(found)} secrets found, e.g. {found[:12]}"
