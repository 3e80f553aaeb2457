"""The support desk, offline: dev violations before training, after it, and after a revert.

Run: ``python examples/support_desk/offline.py [DIR] [--episodes 18]``. It makes a files
workspace in DIR (a new temporary folder if none) with this example's evalset and prompt,
scores the dev split with the scripted agent (:mod:`desk_agent`), trains it with the ``ace``
recipe on corrective feedback (one commit per episode that changed memory), scores dev
again, reverts every training commit with evolve's revert (tombstones included), and scores
dev once more. The agent and the updater are scripted (no network, no model): the numbers
show the harness's mechanics, not a model's quality.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from desk_agent import ScriptedDeskAgent, ScriptedUpdater  # noqa: E402

from evolve.episode import run_episode  # noqa: E402
from evolve.evaluate import episode_setup, open_env  # noqa: E402
from evolve.history import revert  # noqa: E402
from evolve.train import train  # noqa: E402
from evolve.workspace import Workspace, init_workspace  # noqa: E402


@dataclass
class Score:
    """One scoring of the dev split with the scripted agent."""

    episodes: int = 0
    accepted: int = 0
    task_success: int = 0
    violations: Counter[str] = field(default_factory=Counter)

    @property
    def violated(self) -> int:
        return sum(self.violations.values())


def make_workspace(target: Path) -> Workspace:
    """A files workspace at `target` holding this example's evalset and prompt, committed."""
    init_workspace(target, env="files")
    evalset = target / "evalset"
    shutil.rmtree(evalset)
    shutil.copytree(HERE / "evalset", evalset, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(HERE / "prompts" / "system.md", target / "prompts" / "system.md")
    for args in (["add", "-A"], ["commit", "-q", "-m", "support desk: tasks, checks, tools"]):
        subprocess.run(["git", *args], cwd=target, check=True, capture_output=True)
    return Workspace(target)


def score_dev(ws: Workspace) -> Score:
    """The dev split played by the scripted agent with the workspace's memory as it is now."""
    env = open_env(ws)
    setup = replace(episode_setup(ws, env, ws.config.persona), agent=ScriptedDeskAgent())
    score = Score()
    for n, task in enumerate(sorted(env.tasks("dev"), key=lambda t: t.id)):
        result = run_episode(env, ScriptedUpdater(), task, setup, history=None, seed=n)
        score.episodes += 1
        score.accepted += int(result.judgement.accepted)
        score.task_success += int(result.judgement.task_success)
        score.violations.update(v.rule for v in result.judgement.violations)
    return score


def demo(target: Path, episodes: int = 18) -> list[tuple[str, Score]]:
    """Before, after training, after reverting the training commits: the dev scores."""
    ws = make_workspace(target)
    rows = [("before training", score_dev(ws))]
    report = train(
        ws,
        episodes=episodes,
        feedback="corrective",
        agent=ScriptedDeskAgent(),
        agent_llm=ScriptedUpdater(),
        updater_llm=ScriptedUpdater(),
    )
    ws = Workspace(target)
    rows.append((f"after training ({len(report.commits)} commits)", score_dev(ws)))
    for commit in reversed(report.commits):
        revert(ws, commit, reason="support desk demo: take the training back")
    ws = Workspace(target)
    rows.append(("after evolve revert of them", score_dev(ws)))
    return rows


def table(rows: list[tuple[str, Score]]) -> str:
    rules = sorted({rule for _, s in rows for rule in s.violations})
    head = ["dev split", "accepted", "violations", *rules]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in rows:
        cells = [name, f"{s.accepted}/{s.episodes}", str(s.violated)]
        cells += [str(s.violations.get(rule, 0)) for rule in rules]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("dir", nargs="?", type=Path, help="a new or empty folder")
    parser.add_argument("--episodes", type=int, default=18)
    args = parser.parse_args()
    if args.dir is not None:
        print(table(demo(args.dir, args.episodes)))
        return
    with tempfile.TemporaryDirectory() as folder:
        print(table(demo(Path(folder) / "desk", args.episodes)))


if __name__ == "__main__":
    main()
