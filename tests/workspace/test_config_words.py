"""`evolve.yaml`'s refusals, word for word as the pydantic model worded them.

The sections became msgspec Structs checked by `evolve.workspace._fields`; every sentence
below was recorded from the pydantic model they replaced (commit 1ecf527), for the same text.
"""

from __future__ import annotations

import pytest

from evolve.errors import ConfigError
from evolve.workspace import parse_config

# (the text of evolve.yaml, the refusal recorded from the pydantic model)
RECORDED = [
    ("personna: blair\n", "evolve.yaml: unknown key 'personna'."),
    ("gate:\n  min_gian: 0.1\n", "evolve.yaml: unknown key 'gate.min_gian'."),
    (
        "run:\n  runs: many\n",
        "evolve.yaml: key 'run.runs': Input should be a valid integer, unable to parse string as an integer (got 'many').",
    ),
    (
        "run:\n  runs: 0\n",
        "evolve.yaml: key 'run.runs': Input should be greater than or equal to 1 (got 0).",
    ),
    (
        "run:\n  runs: 51\n",
        "evolve.yaml: key 'run.runs': Input should be less than or equal to 50 (got 51).",
    ),
    (
        "run:\n  runs: 1.5\n",
        "evolve.yaml: key 'run.runs': Input should be a valid integer, got a number with a fractional part (got 1.5).",
    ),
    (
        "run:\n  runs: null\n",
        "evolve.yaml: key 'run.runs': Input should be a valid integer (got None).",
    ),
    (
        "run:\n  runs: [1]\n",
        "evolve.yaml: key 'run.runs': Input should be a valid integer (got list).",
    ),
    (
        "run:\n  seed: 100000000000000000000000000000\n",
        "evolve.yaml: key 'run.seed': Input should be less than or equal to 9223372036854775807 (got 100000000000000000000000000000).",
    ),
    (
        "run:\n  seed: -1\n",
        "evolve.yaml: key 'run.seed': Input should be greater than or equal to 0 (got -1).",
    ),
    (
        "memory:\n  inject: everything\n",
        "evolve.yaml: key 'memory.inject': Input should be 'none', 'recipe', 'oracle' or 'fixed' (got 'everything').",
    ),
    (
        "memory:\n  stats: maybe\n",
        "evolve.yaml: key 'memory.stats': Input should be a valid boolean, unable to interpret input (got 'maybe').",
    ),
    (
        "memory:\n  stats: 2\n",
        "evolve.yaml: key 'memory.stats': Input should be a valid boolean, unable to interpret input (got 2).",
    ),
    (
        "train:\n  feedback: loud\n",
        "evolve.yaml: key 'train.feedback': Input should be 'instance' or 'corrective' (got 'loud').",
    ),
    ("version: 2\n", "evolve.yaml: key 'version': Input should be 1 (got 2)."),
    ("version: '1'\n", "evolve.yaml: key 'version': Input should be 1 (got '1')."),
    ("persona: 7\n", "evolve.yaml: key 'persona': Input should be a valid string (got 7)."),
    ("persona: ''\n", "evolve.yaml: key 'persona': must be 1 to 300 characters long (got '')."),
    (
        "persona: a b\n",
        "evolve.yaml: key 'persona': must be one word of printable characters (no space or control) (got 'a b').",
    ),
    ("persona: null\n", "evolve.yaml: key 'persona': Input should be a valid string (got None)."),
    (
        "gate:\n  confidence: 1.5\n",
        "evolve.yaml: key 'gate.confidence': Input should be less than 1 (got 1.5).",
    ),
    (
        "gate:\n  confidence: 0.5\n",
        "evolve.yaml: key 'gate.confidence': Input should be greater than 0.5 (got 0.5).",
    ),
    (
        "gate:\n  min_gain: .nan\n",
        "evolve.yaml: key 'gate.min_gain': Input should be a finite number (got nan).",
    ),
    (
        "gate:\n  max_cost: .inf\n",
        "evolve.yaml: key 'gate.max_cost': Input should be a finite number (got inf).",
    ),
    (
        "gate:\n  max_cost: -1\n",
        "evolve.yaml: key 'gate.max_cost': Input should be greater than or equal to 0 (got -1).",
    ),
    (
        "gate:\n  max_cost: abc\n",
        "evolve.yaml: key 'gate.max_cost': Input should be a valid number, unable to parse string as a number (got 'abc').",
    ),
    (
        "gate:\n  generations: 9\n  max_generations: 5\n",
        "evolve.yaml: key 'gate': generations (9) exceeds max_generations (5) (got dict).",
    ),
    (
        "gate:\n  generations: 9\n  max_generations: 5\n  runs: 0\n",
        "evolve.yaml: key 'gate.runs': Input should be greater than or equal to 1 (got 0).",
    ),
    (
        "models: sim\n",
        "evolve.yaml: key 'models': Input should be a valid dictionary or instance of ModelRoles (got 'sim').",
    ),
    (
        "models: [sim]\n",
        "evolve.yaml: key 'models': Input should be a valid dictionary or instance of ModelRoles (got list).",
    ),
    (
        "models:\n  timeout_s: 0\n",
        "evolve.yaml: key 'models.timeout_s': Input should be greater than 0 (got 0).",
    ),
    (
        "models:\n  timeout_s: .inf\n",
        "evolve.yaml: key 'models.timeout_s': Input should be a finite number (got inf).",
    ),
    (
        "models:\n  timeout_s: 1e308\n",
        "evolve.yaml: key 'models.timeout_s': Input should be less than or equal to 3600 (got '1e308').",
    ),
    (
        "models:\n  total_timeout_s: 0\n",
        "evolve.yaml: key 'models.total_timeout_s': Input should be greater than 0 (got 0).",
    ),
    (
        "models:\n  cache: sometimes\n",
        "evolve.yaml: key 'models.cache': Input should be 'off', 'read', 'write' or 'replay' (got 'sometimes').",
    ),
    (
        "models:\n  cache: true\n",
        "evolve.yaml: key 'models.cache': Input should be 'off', 'read', 'write' or 'replay' (got True).",
    ),
    (
        "models:\n  structured: xml\n",
        "evolve.yaml: key 'models.structured': Input should be 'auto', 'json_schema', 'json_object', 'tools' or 'prompt' (got 'xml').",
    ),
    (
        "models:\n  agent: ''\n",
        "evolve.yaml: key 'models.agent': must be 1 to 300 characters long (got '').",
    ),
    (
        "models:\n  agent: 3\n",
        "evolve.yaml: key 'models.agent': Input should be a valid string (got 3).",
    ),
    (
        "models:\n  max_tokens: 5\n",
        "evolve.yaml: key 'models.max_tokens': Input should be a valid dictionary or instance of MaxTokens (got 5).",
    ),
    (
        "models:\n  max_tokens:\n    agent: 1\n    bogus: 2\n",
        "evolve.yaml: key 'models.max_tokens.agent': Input should be greater than or equal to 16 (got 1) (and 1 more problem).",
    ),
    (
        "models:\n  retry:\n    attempts: 0\n    budget:\n      agent: -1\n",
        "evolve.yaml: key 'models.retry.attempts': Input should be greater than or equal to 1 (got 0) (and 1 more problem).",
    ),
    (
        "models:\n  context_tokens: 10\n",
        "evolve.yaml: key 'models.context_tokens': Input should be greater than or equal to 256 (got 10).",
    ),
    (
        "prices:\n  m:\n    input: .inf\n    output: 1\n",
        "evolve.yaml: key 'prices.m.input': Input should be a finite number (got inf).",
    ),
    ("prices:\n  m:\n    output: 1\n", "evolve.yaml: missing key 'prices.m.input'."),
    (
        "prices:\n  m: 3\n",
        "evolve.yaml: key 'prices.m': Input should be a valid dictionary or instance of Price (got 3).",
    ),
    (
        "prices:\n  '': {input: 1, output: 1}\n",
        "evolve.yaml: key 'prices': the name '' must be 1 to 300 characters long.",
    ),
    (
        "prices:\n  'a b': {input: 1, output: 1}\n",
        "evolve.yaml: key 'prices': the name 'a b' must be one word of printable characters (no space or control).",
    ),
    ("prices: [1]\n", "evolve.yaml: key 'prices': Input should be a valid dictionary (got list)."),
    (
        "prices:\n  3: {input: 1, output: 1}\n",
        "evolve.yaml: key 'prices': the name 3 Input should be a valid string.",
    ),
    (
        "agent:\n  name: x\n  command: [a]\n",
        "evolve.yaml: key 'agent': set one of name or command, not both (got dict).",
    ),
    (
        "agent:\n  command: []\n",
        "evolve.yaml: key 'agent.command': must list the program and its arguments (1 to 64 strings) (got list).",
    ),
    (
        "agent:\n  command: a\n",
        "evolve.yaml: key 'agent.command': Input should be a valid tuple (got 'a').",
    ),
    (
        "agent:\n  command: ['']\n",
        "evolve.yaml: key 'agent.command': each part must be 1 to 4096 printable characters (got list).",
    ),
    (
        "agent:\n  path: [/abs]\n",
        "evolve.yaml: key 'agent.path': '/abs' is not a folder relative to the workspace (got list).",
    ),
    (
        "agent:\n  path: [ok, '../x']\n",
        "evolve.yaml: key 'agent.path': '../x' is not a folder relative to the workspace (got list).",
    ),
    (
        "agent:\n  env: [1BAD]\n",
        "evolve.yaml: key 'agent.env': '1BAD' is not an environment variable name (got list).",
    ),
    (
        "agent:\n  read: ['a b', '']\n",
        "evolve.yaml: key 'agent.read.0': must be one word of printable characters (no space or control) (got 'a b') (and 1 more problem).",
    ),
    (
        "agent:\n  max_turns: 1\n  bogus: 1\n",
        "evolve.yaml: key 'agent.max_turns': Input should be greater than or equal to 2 (got 1) (and 1 more problem).",
    ),
    (
        "train:\n  recipe: ''\n  episodes: 0\n",
        "evolve.yaml: key 'train.recipe': must be 1 to 300 characters long (got '') (and 1 more problem).",
    ),
    (
        "train:\n  review: 'maybe'\n",
        "evolve.yaml: key 'train.review': Input should be a valid boolean, unable to interpret input (got 'maybe').",
    ),
    (
        "render:\n  recipes: ['', 'a b']\n",
        "evolve.yaml: key 'render.recipes.0': must be 1 to 300 characters long (got '') (and 1 more problem).",
    ),
    (
        "render:\n  recipes: x\n",
        "evolve.yaml: key 'render.recipes': Input should be a valid tuple (got 'x').",
    ),
    (
        "protected: []\n",
        "evolve.yaml: key 'protected': must keep evalset/, tests/, evolve.yaml (the gate scores with them; list them with any others) (got list).",
    ),
    (
        "protected: ['tests/', 'evolve.yaml']\n",
        "evolve.yaml: key 'protected': must keep evalset/ (the gate scores with them; list them with any others) (got list).",
    ),
    (
        "protected: [evalset/, tests/, evolve.yaml, /etc]\n",
        "evolve.yaml: key 'protected': '/etc' is not a path inside the workspace (relative, without '..') (got list).",
    ),
    (
        "protected: [evalset/, tests/, evolve.yaml, 3]\n",
        "evolve.yaml: key 'protected.3': Input should be a valid string (got 3).",
    ),
    ("protected: x\n", "evolve.yaml: key 'protected': Input should be a valid tuple (got 'x')."),
    (
        "redact:\n  values: [abc]\n",
        "evolve.yaml: key 'redact': each value must be at least 4 characters (shorter ones hide ordinary text) (got dict).",
    ),
    (
        "redact:\n  env: [bad-name]\n",
        "evolve.yaml: key 'redact': 'bad-name' is not an environment variable name (got dict).",
    ),
    (
        "redact:\n  values: [abcd, 5]\n",
        "evolve.yaml: key 'redact.values.1': Input should be a valid string (got 5).",
    ),
    (
        "share:\n  scopes: some\n",
        "evolve.yaml: key 'share.scopes.literal['all']': Input should be 'all' (got 'some') (and 1 more problem).",
    ),
    (
        "share:\n  scopes: [global, user:Bad]\n",
        "evolve.yaml: key 'share': 'user:Bad' is not a scope (global, skills or user:<persona>) (got dict).",
    ),
    (
        "share:\n  scopes: 5\n",
        "evolve.yaml: key 'share.scopes.literal['all']': Input should be 'all' (got 5) (and 1 more problem).",
    ),
    (
        "skills:\n  holdout_share: 2\n  caps:\n    general: 0\n",
        "evolve.yaml: key 'skills.caps.general': Input should be greater than or equal to 1 (got 0) (and 1 more problem).",
    ),
    (
        "skills:\n  retire_confidence: 0.5\n",
        "evolve.yaml: key 'skills.retire_confidence': Input should be greater than 0.5 (got 0.5).",
    ),
    (
        "parameters:\n  x:\n    min: 5\n    max: 1\n",
        "evolve.yaml: key 'parameters.x': min (5.0) is above max (1.0) (got dict).",
    ),
    ("parameters:\n  x:\n    min: 5\n", "evolve.yaml: missing key 'parameters.x.max'."),
    (
        "parameters:\n  x: 3\n",
        "evolve.yaml: key 'parameters.x': Input should be a valid dictionary or instance of ParameterRange (got 3).",
    ),
    (
        "parameters:\n  'a b': {min: 1, max: 2}\n",
        "evolve.yaml: key 'parameters': the name 'a b' must be one word of printable characters (no space or control).",
    ),
    (
        "caps:\n  ace:\n    units: 0\n",
        "evolve.yaml: key 'caps.ace.units': Input should be greater than or equal to 1 (got 0).",
    ),
    (
        "caps:\n  ace:\n    units: null\n    bogus: 1\n",
        "evolve.yaml: unknown key 'caps.ace.bogus'.",
    ),
    (
        "caps:\n  ace: null\n",
        "evolve.yaml: key 'caps.ace': Input should be a valid dictionary or instance of RecipeCaps (got None).",
    ),
    (
        "environment: ''\n",
        "evolve.yaml: key 'environment': must be 1 to 300 characters long (got '').",
    ),
    (
        "bogus: 1\nrun:\n  runs: x\n  seed: y\n",
        "evolve.yaml: key 'run.runs': Input should be a valid integer, unable to parse string as an integer (got 'x') (and 2 more problems).",
    ),
    ("a: 1\nb: 2\n", "evolve.yaml: unknown key 'a' (and 1 more problem)."),
    (
        "skills:\n  max_injected: 51\n  budget_tokens: -1\n  holdout_share: x\n  batch_size: 0\n  near_misses: x\n",
        "evolve.yaml: key 'skills.max_injected': Input should be less than or equal to 50 (got 51) (and 4 more problems).",
    ),
    (
        "run:\n  concurrency: 1e3\n",
        "evolve.yaml: key 'run.concurrency': Input should be a valid integer, unable to parse string as an integer (got '1e3').",
    ),
    (
        "run:\n  runs: 1e0\n",
        "evolve.yaml: key 'run.runs': Input should be a valid integer, unable to parse string as an integer (got '1e0').",
    ),
    (
        "models:\n  max_tokens:\n    agent: 16.5\n",
        "evolve.yaml: key 'models.max_tokens.agent': Input should be a valid integer, got a number with a fractional part (got 16.5).",
    ),
    (
        "agent:\n  timeout_s: '1e400'\n",
        "evolve.yaml: key 'agent.timeout_s': Input should be a finite number (got '1e400').",
    ),
    (
        "gate:\n  min_gain: -1.5\n",
        "evolve.yaml: key 'gate.min_gain': Input should be greater than or equal to -1 (got -1.5).",
    ),
    (
        "run:\n  runs: '0x10'\n",
        "evolve.yaml: key 'run.runs': Input should be a valid integer, unable to parse string as an integer (got '0x10').",
    ),
    (
        "gate:\n  min_gain: 'nan'\n",
        "evolve.yaml: key 'gate.min_gain': Input should be a finite number (got 'nan').",
    ),
    (
        "gate:\n  min_gain: 'Infinity'\n",
        "evolve.yaml: key 'gate.min_gain': Input should be a finite number (got 'Infinity').",
    ),
    (
        "run:\n  runs: False\n",
        "evolve.yaml: key 'run.runs': Input should be greater than or equal to 1 (got False).",
    ),
    (
        "share:\n  scopes: [all]\n",
        "evolve.yaml: key 'share': 'all' is not a scope (global, skills or user:<persona>) (got dict).",
    ),
    (
        "memory:\n  inject: 1\n",
        "evolve.yaml: key 'memory.inject': Input should be 'none', 'recipe', 'oracle' or 'fixed' (got 1).",
    ),
    (
        "redact:\n  values: abcd\n",
        "evolve.yaml: key 'redact.values': Input should be a valid tuple (got 'abcd').",
    ),
    (
        "agent:\n  read: [3]\n",
        "evolve.yaml: key 'agent.read.0': Input should be a valid string (got 3).",
    ),
    (
        "protected: [evalset/, tests/, evolve.yaml, '']\n",
        "evolve.yaml: key 'protected': '' is not a path inside the workspace (relative, without '..') (got list).",
    ),
    (
        "run:\n  seed: 9223372036854775808\n",
        "evolve.yaml: key 'run.seed': Input should be less than or equal to 9223372036854775807 (got 9223372036854775808).",
    ),
    (
        "agent:\n  max_output_bytes: 1e3\n",
        "evolve.yaml: key 'agent.max_output_bytes': Input should be a valid integer, unable to parse string as an integer (got '1e3').",
    ),
    (
        "run: null\n",
        "evolve.yaml: key 'run': Input should be a valid dictionary or instance of RunConfig (got None).",
    ),
    (
        "run: []\n",
        "evolve.yaml: key 'run': Input should be a valid dictionary or instance of RunConfig (got list).",
    ),
    (
        "parameters: null\n",
        "evolve.yaml: key 'parameters': Input should be a valid dictionary (got None).",
    ),
    ("agent:\n  3: x\n", "evolve.yaml: key 'agent.3': Keys should be strings (got 3)."),
    (
        "version: 100000000000000000000000000000\n",
        "evolve.yaml: key 'version': Unable to parse input string as an integer, exceeded "
        "maximum size (got 100000000000000000000000000000).",
    ),
]


def test_the_table_covers_every_kind_of_refusal() -> None:
    words = " ".join(sentence for _, sentence in RECORDED)
    for kind in (
        "unknown key",
        "missing key",
        "greater than or equal to",
        "less than",
        "valid integer",
        "finite number",
        "valid boolean",
        "valid string",
        "valid tuple",
        "valid dictionary",
        "Input should be 'instance' or 'corrective'",
        "(and 1 more problem)",
        "(and 2 more problems)",
        "the name",
        "Keys should be strings",
        "literal['all']",
    ):
        assert kind in words, kind


@pytest.mark.parametrize(("text", "sentence"), RECORDED)
def test_a_refusal_reads_as_pydantic_worded_it(text: str, sentence: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert str(info.value) == sentence
