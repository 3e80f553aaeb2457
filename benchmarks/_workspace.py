"""A real evolve workspace with many units and a long history, for the training and scoring
benchmarks: `evolve init`'s files, then `units` TEPA units of the persona's scope added by the
first commit and `commits - 1` commits that each change one unit (round-robin), all with the
training loop's trailers, written through `git fast-import` so that set-up takes seconds.

The workspace trains and renders `tepa` (the recipe without a unit cap), so every unit is in
the prompt the agent is given: a dev run and a training episode pay for all of them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from evolve.history import refresh_commit_graph
from evolve.memory import MemoryUnit, dump_unit
from evolve.workspace import Workspace, init_workspace

PERSONA = "alex"
SCOPE = f"user:{PERSONA}"
RECIPE = "tepa"

# What units say: mostly details the persona world has no rule for (each sentence is still
# read against every rule), now and then a statement a rule recognizes.
_TEXTS = (
    "Keep the grocery list for week {i} in the shared folder.",
    "Texts about topic {i} can be short and casual.",
    "The user prefers meetings about project {i} after lunch.",
    "Payments for household item {i} are split with the flatmates.",
    "Notes on book {i} mention the author first.",
    "E-mails about invoice {i} go to the accounting address.",
)
_DIRECTIVES = (
    "Sign texts with '- Alex'.",
    "Payments should be private.",
    "Start e-mails with 'Hi'.",
)


def unit_text(i: int, n: int) -> str:
    if i % 50 == 7:
        return _DIRECTIVES[(i // 50) % len(_DIRECTIVES)]
    return _TEXTS[i % len(_TEXTS)].format(i=i) + (f" (revised at {n})" if n else "")


def unit_bytes(i: int, n: int) -> bytes:
    unit = MemoryUnit(
        id=f"tepa-seed{i:05d}", recipe=RECIPE, kind="precedent", scope=SCOPE,
        created_episode=0, updated_episode=n, key=f"other.detail_{i:05d}",
        text=unit_text(i, n),
    )  # fmt: skip
    return dump_unit(unit).encode("utf-8")


def build_workspace(root: Path, *, units: int, commits: int) -> Workspace:
    """The workspace at `root` (which must not exist), trained recipe `tepa`, with `units`
    units and a history of `commits` commits on top of `evolve init`'s, plus a commit-graph
    (as `evolve train` leaves it)."""
    ws = init_workspace(root, persona=PERSONA)
    config = root / "evolve.yaml"
    text = config.read_text(encoding="utf-8").replace("recipe: ace", f"recipe: {RECIPE}", 1)
    config.write_text(text, encoding="utf-8")
    subprocess.run(["git", "commit", "-q", "-am", "train tepa"], cwd=root, check=True)
    head = ws.store.head()
    stream: list[bytes] = []

    def data(payload: bytes) -> None:
        stream.extend([b"data %d\n" % len(payload), payload, b"\n"])

    for n in range(commits):
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"committer bench <bench@localhost> %d +0000\n" % (1_700_000_000 + n))
        data(
            f"tepa · {PERSONA} · episode {n} (task-{n % 20}): modify 1\n\nEvolve-Episode: {n}\n"
            f"Evolve-Recipe: tepa\nEvolve-Kind: train\nEvolve-Persona: {PERSONA}\n".encode()
        )
        if n == 0:
            stream.append(f"from {head}\n".encode())
            for i in range(units):
                stream.append(
                    b"M 100644 inline memory/%s/tepa-seed%05d.md\n" % (PERSONA.encode(), i)
                )
                data(unit_bytes(i, 0))
        else:
            stream.append(
                b"M 100644 inline memory/%s/tepa-seed%05d.md\n" % (PERSONA.encode(), n % units)
            )
            data(unit_bytes(n % units, n))
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(stream), cwd=root, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)
    for key, value in (("user.name", "bench"), ("user.email", "bench@localhost")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
    ws = Workspace(root)
    refresh_commit_graph(ws.store)
    return ws
