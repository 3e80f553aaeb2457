"""What the secrets grep test plants (tests/e2e/test_secrets_grep.py): an environment whose
task instructions carry a secret, and a model that plays `sim` but echoes every secret in its
replies and records every request it is sent.

Named from evolve.yaml by import path (`environment: _secret_plants:SecretWorld`, `models:
{updater: "_secret_plants:echo_sim"}`), so the commands run exactly as a user's would.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from evolve.envs import Environment
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.llm import Completion, JsonSchema, Message, make_llm

# None of these has a built-in secret shape (short, no prefix, no `password=`), so only
# redaction by value can hide them.
IN_VALUES = "quokka-Vault-7713"  # listed in redact.values
IN_ENV = "wombat-Depot-5519"  # the value of SECRET_PLANT_TOKEN, named in redact.env
IN_OPENAI = "numbat-Relay-8823"  # the value of OPENAI_API_KEY
IN_TASK = "dingo-Harbor-4041"  # in every task's instruction; listed in redact.values too
IN_NOTE = "bilby-Ledger-6062"  # in a hand note; listed in redact.values too
SECRETS = (IN_VALUES, IN_ENV, IN_OPENAI, IN_TASK, IN_NOTE)
ENV_NAME = "SECRET_PLANT_TOKEN"
CAPTURE = "SECRET_PLANT_CAPTURE"  # the JSONL file every request is appended to


class SecretWorld(PersonaWorldEnv):
    """persona_world, with a secret account reference in every task's instruction."""

    name = "persona_world"

    def __init__(self, evalset: Path, **kwargs: Any) -> None:
        super().__init__(evalset, **kwargs)
        self._tasks = {
            k: dataclasses.replace(t, instruction=f"{t.instruction} (account ref {IN_TASK})")
            for k, t in self._tasks.items()
        }
        self._by_instruction = {t.instruction: t for t in self._tasks.values()}


def _echo(value: Any) -> Any:
    """`value` with every secret appended to each sentence-like string (ids, ops and enums,
    which have no space, are left as they are so the reply still parses)."""
    if isinstance(value, str):
        return f"{value} {' '.join(SECRETS)}" if " " in value and len(value) > 12 else value
    if isinstance(value, dict):
        return {k: _echo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_echo(v) for v in value]
    return value


class EchoSim:
    """`sim`, with each secret echoed in the reply and each request recorded."""

    def __init__(self, env: Environment | None) -> None:
        self.inner = make_llm("sim", env=env)
        self.name = "echo-sim"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        schema = json_schema.name if json_schema is not None else "text"
        with open(os.environ[CAPTURE], "a", encoding="utf-8") as out:
            record = {"schema": schema, "messages": [[m.role, m.content] for m in messages]}
            out.write(json.dumps(record) + "\n")
        done = self.inner.complete(
            messages,
            json_schema=json_schema,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
        )
        try:
            payload = json.loads(done.text)
        except ValueError:
            return done
        return dataclasses.replace(done, text=json.dumps(_echo(payload)), model=self.name)


def echo_sim(model: str, /, *, env: Environment | None = None, **options: Any) -> EchoSim:
    return EchoSim(env)


NOTE = "memory/alex/hand-note.md"  # the hand note the person wrote a secret into
PLANTED = frozenset({"evolve.yaml", NOTE})  # the two files that may hold the secrets


def plant(root: Path, extra: Callable[[Path, dict[str, Any]], None]) -> None:
    """A new workspace at `root` with the secrets planted: this module's environment and echo
    models, `redact.values`/`redact.env` listing them, a hand note holding one; `extra` edits
    the config (and may write files) before it is all committed."""
    from evolve.workspace import init_workspace

    init_workspace(root)
    config = yaml.safe_load((root / "evolve.yaml").read_text(encoding="utf-8"))
    echo = "_secret_plants:echo_sim"
    config["environment"] = "_secret_plants:SecretWorld"
    config["models"].update(
        agent=echo, updater=echo, reflector=echo, evolver=echo, selector=echo, cache="write"
    )
    config["redact"] = {"values": [IN_VALUES, IN_TASK, IN_NOTE], "env": [ENV_NAME]}
    extra(root, config)
    (root / "evolve.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (root / NOTE).parent.mkdir(parents=True, exist_ok=True)
    (root / NOTE).write_text(
        f"Always pay from the visa card; the gate code is {IN_NOTE}.\n", encoding="utf-8"
    )
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "person: plant"], cwd=root, check=True)


def git_objects(root: Path, skip: set[str]) -> dict[str, bytes]:
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


@dataclasses.dataclass
class Sweep:
    """Where the secrets were found, and how much was scanned."""

    found: list[str]
    files: int  # workspace files (the planted two left out)
    git_files: int  # files under .git/ (refs, logs, journals, caches)
    objects: int  # git objects, decompressed
    cached: int  # request cache files
    outputs: int  # command outputs
    requests: int
    roles: set[str]  # the schemas of the requests sent


def sweep(root: Path, cache: Path, report: Path, capture: Path, outputs: Sequence[str]) -> Sweep:
    """Grep for every secret: each workspace file, each file under .git/, every git object
    decompressed, the request cache, the report, each command's output and each request sent
    to a model other than the agent's own task turn (its system prompt is scanned)."""
    found: list[str] = []

    def scan(where: str, data: bytes) -> None:
        found.extend(f"{s} in {where}" for s in SECRETS if s.encode() in data)

    files = [p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts]
    for path in files:
        if path.relative_to(root).as_posix() not in PLANTED:
            scan(str(path.relative_to(root)), path.read_bytes())
    git_files = [p for p in (root / ".git").rglob("*") if p.is_file()]
    for path in git_files:  # objects are compressed: see below
        data = path.read_bytes()
        if path.name == "evolve-config.cache":  # what is read of evolve.yaml, by its bytes:
            for value in (IN_VALUES, IN_TASK, IN_NOTE):  # as evolve.yaml lists them
                data = data.replace(value.encode(), b"")
        scan(str(path.relative_to(root)), data)  # never a value from the environment
    skip = {
        subprocess.run(
            ["git", "rev-parse", f"HEAD:{p}"], cwd=root, capture_output=True, text=True,
            check=True,
        ).stdout.strip()
        for p in PLANTED
    }  # fmt: skip
    objects = git_objects(root, skip)
    for sha, body in objects.items():
        scan(f"git object {sha}", body)
    cached = [p for p in cache.rglob("*") if p.is_file()]
    for path in cached:
        scan(str(path), path.read_bytes())
    scan("report.html", (report / "report.html").read_bytes())
    for i, text in enumerate(outputs):
        scan(f"command output {i}", text.encode())
    requests = [json.loads(line) for line in capture.read_text(encoding="utf-8").splitlines()]
    for i, request in enumerate(requests):
        for role, content in request["messages"]:
            if request["schema"] == "agent_action" and role != "system":
                continue  # the agent's own task turn: it needs the task's arguments
            scan(f"request {i} ({request['schema']}, {role})", content.encode())
    return Sweep(
        found, len(files) - len(PLANTED), len(git_files), len(objects), len(cached),
        len(outputs), len(requests), {r["schema"] for r in requests},
    )  # fmt: skip
