"""The sim's selector role: which skills apply to a task, from the prompt alone.

It reads the `<task>` and `<triggers>` sections of the request (`[id] trigger` lines) and the
"at most N ids" of its instructions, and answers with the lexical matcher's choice
(`evolve._triggers.rank_triggers`), a tie going to the line shown first: the request lists
the candidates in the scoreboard's evidence order (`evolve.skills._select.by_evidence`), so
this is the same choice `models.selector: lexical` makes with the evidence, and
`selector: sim` exercises the model path (the request, the JSON reply, its checks) offline.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from evolve._triggers import rank_triggers
from evolve.agent import section
from evolve.llm import Message
from evolve.sim._role import Sim, role

_LINE = re.compile(r"^\[([^\]\s]+)\]\s*(.*)$")
_B = re.compile(r"at most (\d+) ids")


@role("skill_selection")
def _select(sim: Sim, messages: Sequence[Message], rng: random.Random) -> Any:
    text = "\n".join(m.content for m in messages)
    task = section(text, "task") or ""
    triggers = []
    for line in (section(text, "triggers") or "").splitlines():
        match = _LINE.match(line.strip())
        if match:
            triggers.append((match.group(1), match.group(2)))
    found = _B.search(text)
    b = int(found.group(1)) if found else 3
    # A tie goes to the earlier line (the request's order is the evidence order).
    order: dict[str, float] = {}
    for i, (ident, _trigger) in enumerate(triggers):
        order.setdefault(ident, float(len(triggers) - i))
    return {"skills": rank_triggers(task, triggers, order)[:b]}
