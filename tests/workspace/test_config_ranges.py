"""Every field of `evolve.yaml` refuses a hostile value with one sentence naming its key.

A workspace can come from someone else, so `evolve.yaml` is input: an infinite timeout
overflowed the HTTP client, `protected: []` let the gate's own files be evolved. The table
below holds 64 hostile values, at least one per field that takes a number, a name or a path;
each must be refused by `parse_config` with a `ConfigError` whose message names the key.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml

from evolve.errors import ConfigError
from evolve.workspace import parse_config
from evolve.workspace._config import DEFAULT_PROTECTED

INF = math.inf
NAN = math.nan
HUGE = 10**30
_KEEP = ["evalset/", "tests/", "evolve.yaml"]

# (the key the message must name, the dotted path to set, the value)
HOSTILE: list[tuple[str, str, Any]] = [
    ("models.timeout_s", "models.timeout_s", INF),
    ("models.timeout_s", "models.timeout_s", 1e308),
    ("models.timeout_s", "models.timeout_s", NAN),
    ("models.timeout_s", "models.timeout_s", -1),
    ("models.timeout_s", "models.timeout_s", 0),
    ("models.total_timeout_s", "models.total_timeout_s", INF),
    ("models.total_timeout_s", "models.total_timeout_s", 1e308),
    ("models.max_retry_wait_s", "models.max_retry_wait_s", INF),
    ("models.max_retry_wait_s", "models.max_retry_wait_s", 1e308),
    ("models.max_retry_wait_s", "models.max_retry_wait_s", NAN),
    ("models.agent", "models.agent", ""),
    ("models.updater", "models.updater", "   "),
    ("models.reflector", "models.reflector", "sim\nsim"),
    ("models.evolver", "models.evolver", "sim\u202e"),
    ("models.selector", "models.selector", ""),
    ("models.max_tokens.agent", "models.max_tokens.agent", 0),
    ("models.max_tokens.updater", "models.max_tokens.updater", HUGE),
    ("models.structured", "models.structured", "xml"),
    ("models.cache", "models.cache", "sometimes"),
    ("prices.m.input", "prices.m", {"input": INF, "output": 1}),
    ("prices.m.output", "prices.m", {"input": 1, "output": -1}),
    ("prices.m.input", "prices.m", {"input": 1e300, "output": 1}),
    ("memory.max_memory_chars", "memory.max_memory_chars", 10**9),
    ("memory.inject", "memory.inject", "all"),
    ("agent.max_turns", "agent.max_turns", 0),
    ("agent.max_turns", "agent.max_turns", 10**6),
    ("run.runs", "run.runs", 0),
    ("run.concurrency", "run.concurrency", 10**6),
    ("run.seed", "run.seed", HUGE),
    ("run.seed", "run.seed", -1),
    ("train.episodes", "train.episodes", 0),
    ("train.episodes", "train.episodes", 10**12),
    ("train.recipe", "train.recipe", ""),
    ("train.seed", "train.seed", HUGE),
    ("train.feedback", "train.feedback", "none"),
    ("gate.runs", "gate.runs", 0),
    ("gate.min_gain", "gate.min_gain", NAN),
    ("gate.confidence", "gate.confidence", 1.0),
    ("gate.bootstrap_samples", "gate.bootstrap_samples", 10**9),
    ("gate.max_prompt_chars", "gate.max_prompt_chars", 10**15),
    ("gate.max_token_factor", "gate.max_token_factor", INF),
    ("gate.max_token_factor", "gate.max_token_factor", 1e308),
    ("gate.max_cost", "gate.max_cost", INF),
    ("gate.max_cost", "gate.max_cost", NAN),
    ("gate.generations", "gate.generations", 10**9),
    ("gate.train_episodes", "gate.train_episodes", -1),
    ("gate.seed", "gate.seed", HUGE),
    ("protected", "protected", []),
    ("protected", "protected", ["tests/", "evolve.yaml"]),
    ("protected", "protected", ["evalset/", "evolve.yaml"]),
    ("protected", "protected", ["evalset/", "tests/"]),
    ("protected", "protected", [*_KEEP, "/etc/passwd"]),
    ("protected", "protected", [*_KEEP, "../outside"]),
    ("protected", "protected", [*_KEEP, ""]),
    ("render.recipes", "render.recipes", [""]),
    ("skills.holdout_share", "skills.holdout_share", NAN),
    ("skills.retire_confidence", "skills.retire_confidence", INF),
    ("parameters.agent.max_turns.min", "parameters.agent\0max_turns", {"min": -INF, "max": 30}),
    ("parameters.agent.max_turns.max", "parameters.agent\0max_turns", {"min": 4, "max": INF}),
    ("parameters.agent.max_turns.min", "parameters.agent\0max_turns", {"min": NAN, "max": 4}),
    ("parameters", "parameters", {"": {"min": 1, "max": 2}}),
    ("caps.ace.units", "caps.ace.units", 0),
    ("environment", "environment", ""),
    ("persona", "persona", "alex\tblair"),
]


def _document(dotted: str, value: Any) -> str:
    """`evolve.yaml` text setting `dotted` (a NUL keeps a dot inside one key) to `value`."""
    keys = [k.replace("\0", ".") for k in dotted.split(".")]
    data: dict[str, Any] = {}
    here = data
    for key in keys[:-1]:
        here = here.setdefault(key, {})
    here[keys[-1]] = value
    return yaml.safe_dump(data, allow_unicode=False)


def test_the_table_is_the_64_values_the_issue_counts() -> None:
    assert len(HOSTILE) == 64


@pytest.mark.parametrize(("key", "dotted", "value"), HOSTILE)
def test_a_hostile_value_is_refused_naming_its_key(key: str, dotted: str, value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_document(dotted, value))
    message = str(info.value)
    assert f"'{key}'" in message or f"'{key}." in message, message
    assert message.endswith(".") and "\n" not in message


def test_ordinary_values_still_pass() -> None:
    text = _document("models.timeout_s", 600.5) + _document("gate.max_cost", 0.25)
    cfg = parse_config(text)
    assert cfg.models.timeout_s == 600.5 and cfg.gate.max_cost == 0.25
    assert parse_config("protected: [evalset, tests/, evolve.yaml, notes/]\n").protected == (
        "evalset",
        "tests/",
        "evolve.yaml",
        "notes/",
    )
    assert parse_config("").protected == DEFAULT_PROTECTED
    assert parse_config("models:\n  agent: openai:gpt-4o-mini\n").models.agent == (
        "openai:gpt-4o-mini"
    )
    assert parse_config("environment: mypkg.worlds:World\n").environment == "mypkg.worlds:World"
