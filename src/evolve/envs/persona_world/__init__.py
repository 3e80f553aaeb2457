"""`persona_world`: apps, tasks, personas and preference rules, all offline.

The persona model (`Persona`, `Preference`, `load_personas`, which validates persona files
with pydantic) is imported on first use (PEP 562): the environment validates only when its
evalset is not remembered (see `_evalset`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evolve._lazy import lazy_exports
from evolve.envs.persona_world._env import (
    STAT_CARDS,
    STAT_CHECKSUM,
    STAT_PAID,
    History,
    PersonaWorldEnv,
)
from evolve.envs.persona_world._rules import (
    RULES,
    RULES_BY_NAME,
    RULES_BY_SLOT,
    CheckContext,
    Rule,
    format_items,
    most_used_card,
    note_checksum,
    recognize,
    split_sentences,
    total_paid,
)
from evolve.envs.persona_world._tasks import (
    FAMILIES,
    FAMILIES_BY_NAME,
    MAIN_TOOL,
    contact_of,
    main_call,
    reference_args,
)
from evolve.envs.persona_world._values import Computed, Directive, Ref, Value
from evolve.envs.persona_world._world import (
    CONTACTS,
    CONTACTS_BY_KEY,
    Card,
    Contact,
    Payment,
    PersonaWorld,
    PersonaWorldState,
    Profile,
    api_docs,
    tool_names,
)

if TYPE_CHECKING:
    from evolve.envs.persona_world._personas import Persona, Preference, load_personas

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {"evolve.envs.persona_world._personas": ("Persona", "Preference", "load_personas")},
)


__all__ = [
    "CONTACTS",
    "CONTACTS_BY_KEY",
    "FAMILIES",
    "FAMILIES_BY_NAME",
    "MAIN_TOOL",
    "RULES",
    "RULES_BY_NAME",
    "RULES_BY_SLOT",
    "STAT_CARDS",
    "STAT_CHECKSUM",
    "STAT_PAID",
    "Card",
    "CheckContext",
    "Computed",
    "Contact",
    "Directive",
    "History",
    "Payment",
    "Persona",
    "PersonaWorld",
    "PersonaWorldEnv",
    "PersonaWorldState",
    "Preference",
    "Profile",
    "Ref",
    "Rule",
    "Value",
    "api_docs",
    "contact_of",
    "format_items",
    "load_personas",
    "main_call",
    "most_used_card",
    "note_checksum",
    "recognize",
    "reference_args",
    "split_sentences",
    "tool_names",
    "total_paid",
]
