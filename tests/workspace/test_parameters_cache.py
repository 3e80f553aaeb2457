"""`prompts/parameters.yaml` is read through the workspace's YAML cache: the values and the
error sentences are those of a fresh parse, and only a document that parsed is remembered."""

from __future__ import annotations

import pytest

from evolve._format._cache import YAML_CACHE
from evolve.errors import ConfigError
from evolve.workspace import PARAMETERS_FILE, Workspace, load_parameters


def test_values_read_from_the_cache_are_the_parsed_ones(workspace: Workspace) -> None:
    (workspace.root / PARAMETERS_FILE).write_text("agent.max_turns: 12\n", encoding="utf-8")
    cache = workspace.root / ".git" / YAML_CACHE
    cache.unlink(missing_ok=True)
    first = load_parameters(workspace.root, workspace.config)
    assert cache.is_file()  # remembered
    assert load_parameters(workspace.root, workspace.config) == first == {"agent.max_turns": 12}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("agent.max_turns: [1\n", "prompts/parameters.yaml is not valid YAML."),
        ("- 1\n", "prompts/parameters.yaml must map parameter names to numbers."),
        ("agent.max_turns: 99\n", "is outside its range"),
    ],
)
def test_an_invalid_file_says_so_every_time(workspace: Workspace, text: str, says: str) -> None:
    (workspace.root / PARAMETERS_FILE).write_text(text, encoding="utf-8")
    for _ in range(2):  # the second read is not answered from the cache either
        with pytest.raises(ConfigError) as info:
            load_parameters(workspace.root, workspace.config)
        assert says in str(info.value)


def test_a_file_that_is_not_utf8_says_so(workspace: Workspace) -> None:
    (workspace.root / PARAMETERS_FILE).write_bytes(b"agent.max_turns: 5 # \xe9\n")
    with pytest.raises(ConfigError) as info:
        load_parameters(workspace.root, workspace.config)
    assert str(info.value) == f"{PARAMETERS_FILE} is not UTF-8 text; save it as UTF-8."
