"""`evolve init --env files`: a minimal evalset a person edits into their own tasks."""

from __future__ import annotations

import re
from pathlib import Path

from evolve._io import atomic_write

FILES_MODEL = "openai/gpt-4o-mini"

TASKS = """\
{"id": "greet-1", "split": "train", "instruction": "Reply to the customer who asks when the shop opens.", "inputs": {"customer": "Ana"}, "expected": "9:00"}
{"id": "greet-2", "split": "train", "instruction": "Reply to the customer who asks when the shop closes.", "inputs": {"customer": "Ben"}, "expected": "18:00"}
{"id": "greet-3", "split": "dev", "instruction": "Reply to the customer who asks when the shop opens on Saturday.", "inputs": {"customer": "Cleo"}, "expected": "10:00"}
{"id": "greet-4", "split": "holdout", "instruction": "Reply to the customer who asks when the shop closes on Saturday.", "inputs": {"customer": "Dev"}, "expected": "14:00"}
"""

CHECKS = '''\
"""Checkers (PROTECTED, like all of evalset/): plain functions, asked for by parameter name
(task, answer, calls). check/check_*: is the task done? True or None, or the complaint.
rule_<name>: a house rule; None (does not apply), True (kept), or the complaint (or a pair:
the instance-tier complaint, the corrective-tier complaint). See docs/environments.md."""


def check(task, answer):
    if task.expected is not None and str(task.expected) not in str(answer):
        return "That is not the right time."
    return True


def rule_greets_by_name(task, answer):
    name = task.inputs.get("customer")
    if not name:
        return None
    if not str(answer).startswith(f"Hi {name}"):
        return ("You did not greet me the way I like.", f"Start every reply with 'Hi {name},'.")
    return True
'''

TOOLS = '''\
"""Tools the agent may call (PROTECTED): each public function is a tool `tools__<name>`;
a parameter named `task` gets the task. The agent answers with `tools__submit`."""

HOURS = {"weekday": ("9:00", "18:00"), "saturday": ("10:00", "14:00")}


def opening_hours(day: str = "weekday"):
    """The shop's opening and closing time on a day (weekday or saturday)."""
    opens, closes = HOURS[day.lower()]
    return {"opens": opens, "closes": closes}
'''

SYSTEM = """\
You are an assistant who does tasks for one user with the tools described below.

How to work:
- Reply with exactly one JSON object per turn: {"tool": "tools__<name>", "arguments": {...}}.
- Look up what you need with the tools, then give your answer with tools__submit
  {"answer": "..."}.
- What you remember about this user is listed under <memory>; follow it.
"""


def write_scaffold(target: Path, *, persona_given: bool) -> None:
    """Turn a freshly copied harness at `target` into a files-environment workspace."""
    config = target / "evolve.yaml"
    text = config.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^environment:.*$", "environment: files", text)
    if not persona_given:  # one implicit user: any name scopes its memory
        text = re.sub(r"(?m)^persona:\s*\S+", "persona: user  ", text)
    # The offline sim plays persona_world's tasks only: your tasks need a model (or your agent).
    text = re.sub(r"(?m)^(  (?:agent|updater|reflector):)\s*sim\b.*$", rf"\1 {FILES_MODEL}", text)
    atomic_write(config, text)
    evalset = target / "evalset"
    for old in sorted(evalset.rglob("*"), reverse=True):
        if old.is_dir() and not old.is_symlink():
            old.rmdir()
        else:
            old.unlink()
    atomic_write(evalset / "tasks.jsonl", TASKS)
    atomic_write(evalset / "checks.py", CHECKS)
    atomic_write(evalset / "tools.py", TOOLS)
    atomic_write(target / "prompts" / "system.md", SYSTEM)
    (target / "experiments" / "q3.yaml").unlink(missing_ok=True)  # persona_world's personas
