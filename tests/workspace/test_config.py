"""`evolve.yaml`: parsing, validation and the wording of its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve.errors import ConfigError, EvolveError
from evolve.workspace import CONFIG_NAME, EvolveConfig, harness_root, load_config, parse_config


def test_empty_text_gives_the_defaults() -> None:
    assert parse_config("") == EvolveConfig()
    assert parse_config("# only a comment\n") == EvolveConfig()


def test_shipped_config_is_valid_and_matches_the_defaults_that_matter() -> None:
    cfg = load_config(harness_root() / CONFIG_NAME)
    assert cfg.version == 1
    assert cfg.environment == "persona_world"
    assert "evalset/" in cfg.protected and "tests/" in cfg.protected
    assert CONFIG_NAME in cfg.protected
    assert cfg.gate.generations <= cfg.gate.max_generations


def test_values_are_read() -> None:
    cfg = parse_config(
        "persona: blair\nmodels:\n  agent: openai/x\nrun:\n  runs: 3\n  concurrency: 4\n"
        "gate:\n  generations: 2\n  max_generations: 3\n"
    )
    assert cfg.persona == "blair"
    assert cfg.models.agent == "openai/x"
    assert cfg.models.updater == "sim"  # untouched keys keep their defaults
    assert (cfg.run.runs, cfg.run.concurrency) == (3, 4)
    assert (cfg.gate.generations, cfg.gate.max_generations) == (2, 3)


def test_config_is_frozen() -> None:
    cfg = parse_config("persona: alex\n")
    with pytest.raises(ValueError):
        cfg.persona = "blair"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("persona: alex\npersonna: blair\n", "personna"),
        ("gate:\n  min_gian: 0.1\n", "gate.min_gian"),
        ("models:\n  agnet: sim\n", "models.agnet"),
    ],
)
def test_unknown_key_is_named(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    message = str(info.value)
    assert f"unknown key '{key}'" in message
    assert message.startswith(CONFIG_NAME)


@pytest.mark.parametrize(
    ("text", "key", "expected", "got"),
    [
        ("run:\n  runs: many\n", "run.runs", "integer", "'many'"),
        ("run:\n  runs: 0\n", "run.runs", "greater than or equal to 1", "0"),
        ("memory:\n  inject: everything\n", "memory.inject", "'none'", "'everything'"),
        ("train:\n  feedback: loud\n", "train.feedback", "'corrective'", "'loud'"),
        ("version: 2\n", "version", "1", "2"),
        ("persona: 7\n", "persona", "string", "7"),
        ("gate:\n  confidence: 1.5\n", "gate.confidence", "less than 1", "1.5"),
    ],
)
def test_wrong_type_or_value_names_key_and_expectation(
    text: str, key: str, expected: str, got: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    message = str(info.value)
    assert f"key '{key}'" in message
    assert expected in message
    assert f"(got {got})" in message


def test_section_given_as_scalar_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"key 'models'"):
        parse_config("models: sim\n")


def test_several_problems_are_counted() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("bogus: 1\nrun:\n  runs: x\n  seed: y\n")
    assert "(and 2 more problems)" in str(info.value)


def test_generations_above_max_generations_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("gate:\n  generations: 9\n  max_generations: 5\n")
    message = str(info.value)
    assert "'gate'" in message
    assert "generations (9) exceeds max_generations (5)" in message


def test_max_generations_has_a_hard_ceiling() -> None:
    with pytest.raises(ConfigError, match=r"gate\.max_generations"):
        parse_config("gate:\n  max_generations: 51\n  generations: 1\n")


def test_bad_yaml_names_the_line() -> None:
    text = "version: 1\npersona: alex\nmodels:\n  agent: [sim\n  updater: sim\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="my.yaml")
    message = str(info.value)
    assert message.startswith("my.yaml is not valid YAML at line ")
    line = int(message.split("at line ")[1].split(";")[0])
    assert 4 <= line <= 6


@pytest.mark.parametrize(("text", "kind"), [("- a\n- b\n", "list"), ("just words\n", "str")])
def test_non_mapping_is_refused(text: str, kind: str) -> None:
    with pytest.raises(ConfigError, match=rf"must be a mapping .*not a {kind}"):
        parse_config(text)


def test_config_error_is_an_evolve_error() -> None:
    with pytest.raises(EvolveError):
        parse_config("nope: 1\n")


def test_load_config_missing_file_says_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / CONFIG_NAME
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert "evolve init" in str(info.value)


def test_load_config_names_the_file_in_errors(tmp_path: Path) -> None:
    path = tmp_path / CONFIG_NAME
    path.write_text("persona: alex\nunknown: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(str(path))
    assert "unknown key 'unknown'" in str(info.value)


def test_load_config_reads_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / CONFIG_NAME
    path.write_text("persona: casey\ntrain:\n  recipe: tepa\n", encoding="utf-8")
    cfg = load_config(path)
    assert cfg.persona == "casey"
    assert cfg.train.recipe == "tepa"
