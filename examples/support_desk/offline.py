"""The support desk, offline, through the commands a user types: dev violations before
training, after a gated generation, the gate's verdict, and after a revert.

Run: ``python examples/support_desk/offline.py [DIR]``. It makes a files workspace in DIR (a
new temporary folder if none): ``evolve init --env files``, this example's evalset, prompt
and agent (``agent/desk_agent.py``, named in ``evolve.yaml`` as
``agent: {name: "desk_agent:make_agent", path: [agent]}``, with the scripted updater named
as ``models.updater``), committed. Then, each step an ``evolve`` command run as a program:

1. ``evolve run --split dev``: the dev violations before training;
2. ``evolve evolve --generations 1``: one generation trains on corrective feedback (one
   commit per episode that changed memory) and the gate scores it against its base on dev
   (paired bootstrap): accepted or rejected, with the interval of the gain;
3. ``evolve run --split dev``: the violations after training;
4. ``evolve revert`` of every training commit of the generation, newest first;
5. ``evolve run --split dev``: the violations are back.

The agent and the updater are scripted (no network, no model): the numbers show the harness's
mechanics, not a model's quality.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
AGENT_FOLDER = "agent"


class CommandFailed(RuntimeError):
    """An evolve command exited non-zero (its standard error is the message)."""


def evolve(workspace: Path, *args: str) -> Any:
    """Run ``evolve ARGS --json`` in `workspace` as a user would; its JSON document."""
    done = subprocess.run(
        [sys.executable, "-m", "evolve", *args, "--json"],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise CommandFailed(f"evolve {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return json.loads(done.stdout)


@dataclass
class Score:
    """One scoring of the dev split (`evolve run --split dev --json`)."""

    episodes: int = 0
    accepted: int = 0
    violations: dict[str, int] = field(default_factory=dict)

    @property
    def violated(self) -> int:
        return sum(self.violations.values())

    @classmethod
    def of(cls, report: dict[str, Any]) -> Score:
        return cls(
            episodes=int(report["episodes"]),
            accepted=sum(bool(t["accepted"]) for t in report["tasks"]),
            violations={rule: int(r["violations"]) for rule, r in report["rules"].items()},
        )


@dataclass
class Gate:
    """The gate's verdict on one generation (`evolve evolve --json`)."""

    verdict: str
    low: float
    high: float
    mean: float
    pairs: int
    commits: list[str]


@dataclass
class Demo:
    before: Score
    trained: Score
    gate: Gate
    reverted: Score


def make_workspace(target: Path) -> Path:
    """A files workspace at `target` holding this example's evalset, prompt and agent, the
    agent and the updater named in its evolve.yaml; committed."""
    subprocess.run(
        [sys.executable, "-m", "evolve", "init", "--env", "files", str(target)],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(target / "evalset")
    shutil.copytree(
        HERE / "evalset", target / "evalset", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy2(HERE / "prompts" / "system.md", target / "prompts" / "system.md")
    (target / AGENT_FOLDER).mkdir()
    shutil.copy2(HERE / "desk_agent.py", target / AGENT_FOLDER / "desk_agent.py")
    config_file = target / "evolve.yaml"
    config = yaml.safe_load(config_file.read_text("utf-8"))
    config["agent"].update(name="desk_agent:make_agent", path=[AGENT_FOLDER])
    scripted = "desk_agent:scripted_updater"
    config["models"].update(agent="mock", updater=scripted, reflector=scripted)
    config["train"]["feedback"] = "corrective"
    config["protected"].append(f"{AGENT_FOLDER}/")  # the evolving side never edits the agent
    config_file.write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    for args in (["add", "-A"], ["commit", "-q", "-m", "support desk: tasks, checks, agent"]):
        subprocess.run(["git", *args], cwd=target, check=True, capture_output=True)
    return target


def demo(target: Path) -> Demo:
    """Before, the gated generation, after it, after reverting its training commits."""
    ws = make_workspace(target)
    before = Score.of(evolve(ws, "run", "--split", "dev"))
    generation = evolve(ws, "evolve", "--generations", "1")["generations"][0]
    gain = generation["dev_gain"]
    commits = [c["commit"] for c in generation["changes"] if c["kind"] == "memory"]
    gate = Gate(
        generation["verdict"], gain["low"], gain["high"], gain["mean"], gain["pairs"], commits
    )
    trained = Score.of(evolve(ws, "run", "--split", "dev"))
    for commit in reversed(commits):
        evolve(ws, "revert", commit, "--reason", "support desk demo: take the training back")
    reverted = Score.of(evolve(ws, "run", "--split", "dev"))
    return Demo(before, trained, gate, reverted)


def _commits(n: int) -> str:
    return f"{n} commit" if n == 1 else f"{n} commits"


def table(result: Demo) -> str:
    rows = [
        ("before training", result.before),
        (f"after training (generation 1: {_commits(len(result.gate.commits))})", result.trained),
        ("after evolve revert of them", result.reverted),
    ]
    rules = sorted({rule for _, s in rows for rule in s.violations})
    head = ["dev split", "accepted", "violations", *rules]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in rows:
        cells = [name, f"{s.accepted}/{s.episodes}", str(s.violated)]
        cells += [str(s.violations.get(rule, 0)) for rule in rules]
        lines.append("| " + " | ".join(cells) + " |")
    g = result.gate
    verdict = f"{g.verdict}: dev gain {g.mean:+.3f} [{g.low:+.3f}, {g.high:+.3f}] ({g.pairs} pairs)"
    lines.insert(4, "| GATE generation 1 | " + verdict + " |" + " |" * (len(head) - 2))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("dir", nargs="?", type=Path, help="a new or empty folder")
    args = parser.parse_args()
    try:
        if args.dir is not None:
            print(table(demo(args.dir)))
            return
        with tempfile.TemporaryDirectory() as folder:
            print(table(demo(Path(folder) / "desk")))
    except CommandFailed as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
