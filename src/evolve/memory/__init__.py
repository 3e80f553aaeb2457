"""Memory: unit files, reading them (now or at any revision), and rendering them."""

from evolve.memory._files import MEMORY_PREFIX, UnitReader, in_scope, load_units, load_units_at
from evolve.memory._render import RENDERERS, fixed_block, register_renderer, render_memory
from evolve.memory._unit import (
    GLOBAL_SCOPE,
    SCOPE_PATTERN,
    UNIT_SCHEMA,
    MalformedUnit,
    MemoryUnit,
    Status,
    dump_unit,
    parse_unit,
    scope_for,
    unit_path,
)

__all__ = [
    "GLOBAL_SCOPE",
    "MEMORY_PREFIX",
    "SCOPE_PATTERN",
    "RENDERERS",
    "UNIT_SCHEMA",
    "UnitReader",
    "MalformedUnit",
    "MemoryUnit",
    "Status",
    "dump_unit",
    "fixed_block",
    "in_scope",
    "load_units",
    "load_units_at",
    "parse_unit",
    "register_renderer",
    "render_memory",
    "scope_for",
    "unit_path",
]
