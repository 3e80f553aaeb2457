#!/usr/bin/env python3
"""A newcomer, in CI: a fresh venv, the README's first set-up command verbatim, then every
command of "The three jobs" exactly as the README writes it, in one shell, each checked
against what the README says the user will see.

Every expected fragment below must also appear, word for word, in the README's text, so the
README cannot promise what this script no longer checks (and the other way round).
Usage: python .ci/newcomer.py  (from the repository root; exits non-zero on the first miss)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

# (command as written in the README, fragments its output must hold: each quoted in README)
EXPECT: dict[str, list[str]] = {
    "evolve run --split dev#1": ["success 0.000", "violations 1.000"],
    "evolve train --episodes 12 --feedback corrective": ["8 memory commits"],
    "evolve run --split dev#2": ["success 0.750", "violations 0.286"],
    "git log --oneline -3": ["ace · alex · episode 11 (pay_back-1): "],
    "evolve log -n 3": ["complaint: "],
    "evolve memory": ["# memory for user:alex"],
    "evolve revert HEAD~3": ["reverted "],
    "evolve run --split dev#3": ["success 0.500", "violations 0.571"],
    "evolve evolve --generations 1 --dry-run": ["dry run: the workspace was not changed"],
    "evolve evolve --generations 1": ["generation 1: score did not"],
    "evolve report": ["wrote "],
}


def blocks(section: str) -> list[list[str]]:
    """The command lines of each fenced block in the README section titled `section`."""
    start = README.index(f"## {section}")
    end = README.find("\n## ", start + 1)
    text = README[start : end if end >= 0 else len(README)]
    found = re.findall(r"```\n(.*?)```", text, re.S)
    return [[ln for ln in b.splitlines() if ln.strip()] for b in found]


def shell(command: str, env: dict[str, str], cwd: Path) -> tuple[int, str]:
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    return done.returncode, done.stdout + done.stderr


def main() -> int:
    for fragments in EXPECT.values():
        for fragment in fragments:
            if fragment not in README:
                print(f"newcomer: the README no longer says {fragment!r}; update both.")
                return 1
    work = Path(tempfile.mkdtemp(prefix="evolve-newcomer-"))
    clone = work / "evolve"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVOLVE_", "VIRTUAL_ENV"))}
    env["PATH"] = os.defpath if "PATH" not in env else env["PATH"]
    shutil.rmtree("/tmp/evolve-demo", ignore_errors=True)
    setup = blocks("Set up on a fresh machine")[0][0]
    code, out = shell(setup, env, clone)
    print(f"$ {setup}\n{out[-1500:]}")
    if code != 0 or "generation" not in out:
        print("newcomer: the first set-up command failed.")
        return 1
    env["PATH"] = f"{clone / '.venv' / 'bin'}:{env['PATH']}"
    shutil.rmtree("/tmp/my-agent", ignore_errors=True)
    seen: dict[str, int] = {}
    cwd = clone
    for block in blocks("The three jobs"):
        for line in block:
            for part in [p.strip() for p in line.split("&&")]:
                if part.startswith("cd "):
                    cwd = Path(part[3:].strip())
                    continue
                seen[part] = seen.get(part, 0) + 1
                key = part if part in EXPECT else f"{part}#{seen[part]}"
                code, out = shell(part, env, cwd)
                print(f"$ {part}\n{out[-1200:]}")
                if code != 0:
                    print(f"newcomer: `{part}` exited {code}.")
                    return 1
                for fragment in EXPECT.get(key, []):
                    if fragment not in out:
                        print(f"newcomer: `{part}` did not print {fragment!r}.")
                        return 1
    print("newcomer: every README command ran and said what the README says.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
