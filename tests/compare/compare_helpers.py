"""A small experiment the compare tests run (a few seconds with the sim)."""

from __future__ import annotations

import hashlib
from pathlib import Path

SMALL = """\
name: small
personas: [blair]
feedback: [instance]
orders: [0, 1]
eval_seeds: [0, 1]
episodes: 6
splits: [dev]
bootstrap_samples: 200
arms:
  none: {}
  oracle: {}
  fixed: {type: fixed, match: ace}
  block: {type: fixed, chars: 300}
  ace: {}
  tepa: {}
"""


def write_small(root: Path, text: str = SMALL) -> Path:
    path = root / "experiments" / "small.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def snapshot(root: Path, git_dir: Path) -> dict[str, str]:
    """HEAD, the branch, the index and every file of the working tree, byte for byte (the
    experiment's results folder left out: it is output, ignored by git)."""
    out = {
        "HEAD": (git_dir / "HEAD").read_text(encoding="utf-8"),
        "index": hashlib.sha256((git_dir / "index").read_bytes()).hexdigest(),
    }
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".git" or rel.parts[:2] == ("generations", "experiments"):
            continue
        if path.is_file():
            out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
