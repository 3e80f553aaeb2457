"""How the sim's agent follows injected skills: only through `<skills>`.

The sim reads the `<skills>` section of the system prompt (nothing else: not `<memory>`, not
the skill files) and recognizes two procedures in each line's lesson (the text after the
`[id] trigger:` head):

- **verify** ("verify", "confirm", "read it back", "re-read", "double-check", "final state",
  "final check", "went through"): after the task's write, read the app's record back
  (`phone__show_text_messages`, `venmo__show_sent_payments`, `simple_note__show_notes`,
  `gmail__show_sent_emails`);
- **lookup** ("look up", "lookup", "search", "existing", "past payments", "before sending",
  "before paying", "before saving", "before writing"): before the write, look up what it
  depends on (`phone__search_contacts` for a text or an e-mail, `venmo__show_transactions`
  for a payment, `simple_note__show_notes` for a note).

Lessons are read clause by clause (cut at `;`, `:`, `.`, `,` and "but"). A clause that names a
procedure and says "skip", "don't", "do not", "never", "no need", "without" or "avoid" negates
it: a negated lookup drops every look-up call before the write (the default contact search
too); a negated verify drops the read-back. A negation anywhere in the section wins over any
line asking for the procedure, so a wrong lesson ("Skip the final check: ...") undoes a right
one whatever their order: this is how a wrong lesson hurts. Skills are followed as written,
with no lapse; the selector (not the sim) decides which skills the prompt carries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evolve.agent import section
from evolve.envs import Task
from evolve.envs.persona_world import MAIN_TOOL
from evolve.envs.persona_world._procedures import LOOK_UP, READ_BACK

_NEGATION = re.compile(r"\b(skip|skipping|don't|don’t|do not|never|no need|without|avoid)\b")
_VERIFY = re.compile(
    r"\b(verify|verifying|confirm|confirming|read it back|read back|re-read|reread|double-check"
    r"|final state|final check|went through)\b"
)
_LOOKUP = re.compile(
    r"\b(look up|looking up|lookup|look-up|search|existing|past payments|before sending"
    r"|before paying|before saving|before writing)\b"
)
_HEAD = re.compile(r"^\s*\[[^\]\s]+\]\s*")
_LOOKUPS = frozenset(LOOK_UP.values())


@dataclass(frozen=True)
class Procedures:
    """What the injected skills say: True (do it), False (negated), None (nothing said)."""

    verify: bool | None = None
    lookup: bool | None = None


def lesson_of(line: str) -> str:
    """The lesson of a rendered skill line `[id] trigger: lesson` (the whole line without
    a head)."""
    rest = _HEAD.sub("", line, count=1)
    head, sep, tail = rest.partition(": ")
    return tail if sep else rest


_CLAUSE = re.compile(r"[;:.!?]|,|\bbut\b")


def read_procedures(system_prompt: str) -> Procedures:
    """The procedures the `<skills>` section of `system_prompt` asks for.

    Each lesson is cut into clauses (at `;`, `:`, `.`, `,`, "but"); a clause that names a
    procedure asks for it, or, with a negation word, asks to skip it. A skip anywhere wins
    over an ask (a wrong lesson is followed whatever line comes first).
    """
    body = section(system_prompt, "skills") or ""
    verify: bool | None = None
    lookup: bool | None = None
    for line in body.splitlines():
        for clause in _CLAUSE.split(lesson_of(line).lower()):
            if not clause.strip():
                continue
            positive = _NEGATION.search(clause) is None
            if _VERIFY.search(clause):
                verify = positive if verify is not False else False
            if _LOOKUP.search(clause):
                lookup = positive if lookup is not False else False
    return Procedures(verify, lookup)


def follow_skills(steps: list[str], task: Task, system_prompt: str) -> list[str]:
    """The plan of calls `steps` changed as the injected skills say (see the module doc)."""
    if task.kind not in MAIN_TOOL or "<skills>" not in system_prompt:
        return steps
    said = read_procedures(system_prompt)
    main = MAIN_TOOL[task.kind]
    if main not in steps:
        return steps
    out = list(steps)
    if said.lookup is False:
        at = out.index(main)
        out = [s for s in out[:at] if s not in _LOOKUPS] + out[at:]
    elif said.lookup is True and LOOK_UP[task.kind] not in out[: out.index(main)]:
        out.insert(out.index(main), LOOK_UP[task.kind])
    if said.verify is True:
        out.insert(out.index(main) + 1, READ_BACK[task.kind])
    # said.verify False: the default plan never reads back, so there is nothing to drop
    return out
