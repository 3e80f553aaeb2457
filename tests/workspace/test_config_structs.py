"""`evolve.yaml`'s sections without pydantic: msgspec Structs with the part of pydantic's model
API evolve uses, and the parsed document remembered in `.git/` so a warm run skips PyYAML."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from evolve import _yaml
from evolve._format._cache import YAML_CACHE, DiskCache
from evolve.errors import ConfigError
from evolve.workspace import CONFIG_NAME, EvolveConfig, RecipeCaps, load_config, parse_config
from evolve.workspace._config import ParameterRange
from evolve.workspace._fields import Invalid


def _modules_after(code: str, cwd: Path) -> set[str]:
    """The top-level modules a fresh interpreter holds after running `code`."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return {name.split(".")[0] for name in done.stdout.split()}


def test_the_config_model_loads_without_pydantic(tmp_path: Path) -> None:
    loaded = _modules_after("import evolve.workspace._config", tmp_path)
    assert "msgspec" in loaded
    assert "pydantic" not in loaded and "pydantic_core" not in loaded


def test_a_warm_load_reads_the_document_from_the_cache_without_pyyaml(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / CONFIG_NAME).write_text("persona: blair\nrun:\n  runs: 3\n", encoding="utf-8")
    code = (
        "from pathlib import Path\nfrom evolve.workspace._config import load_config\n"
        f"cfg = load_config(Path({str(tmp_path / CONFIG_NAME)!r}))\n"
        "assert (cfg.persona, cfg.run.runs) == ('blair', 3)"
    )
    assert "yaml" in _modules_after(code, tmp_path)  # cold: parsed, and remembered
    assert (tmp_path / ".git" / YAML_CACHE).exists()
    assert "yaml" not in _modules_after(code, tmp_path)  # warm: the remembered document


def test_the_yaml_cache_serves_the_same_document_and_keeps_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = str(tmp_path / YAML_CACHE)
    text = "a: [1, 2.5, x]\nb: {c: null, d: true}\n"
    first = _yaml.load(text, "f.yaml", cache=cache)
    parses: list[str] = []
    real = yaml.load

    def counted(text: str, **kw: Any) -> Any:
        parses.append(text)
        return real(text, **kw)

    monkeypatch.setattr(yaml, "load", counted)
    again = _yaml.load(text, "f.yaml", cache=cache)
    assert again == first == {"a": [1, 2.5, "x"], "b": {"c": None, "d": True}}
    again["a"].append(3)  # each caller gets its own copy
    assert _yaml.load(text, "f.yaml", cache=cache) == first
    assert parses == []
    twice = "a: 1\na: 2\n"
    for _ in range(2):  # refused both times: a refusal is never remembered
        with pytest.raises(_yaml.DuplicateKey):
            _yaml.load(twice, "f.yaml", cache=cache)
    with pytest.raises(yaml.YAMLError):
        _yaml.load("a: [1\n", "f.yaml", cache=cache)
    assert len(DiskCache(cache).entries()) == 1
    assert parses == [twice, twice, "a: [1\n"]


def test_a_config_with_redact_values_stays_out_of_the_cache(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    path = tmp_path / CONFIG_NAME
    secret = "s3cret-value-1234"
    path.write_text(f"redact:\n  values: [{secret}]\n", encoding="utf-8")
    assert load_config(path).redact.values == (secret,)
    cache = tmp_path / ".git" / YAML_CACHE
    assert not cache.exists() or secret.encode() not in cache.read_bytes()
    path.write_text("redact:\n  env: [MY_TOKEN]\n", encoding="utf-8")
    assert load_config(path).redact.env == ("MY_TOKEN",)
    assert len(DiskCache(str(cache)).entries()) == 1  # no literal secret: kept


def test_pydantic_model_api_on_the_sections() -> None:
    cfg = parse_config("persona: blair\ncaps:\n  ace:\n    chars: 80\n")
    dumped = cfg.model_dump()
    assert dumped["models"]["max_tokens"]["agent"] == 512
    assert dumped["protected"] == ("evalset/", "tests/", "evolve.yaml", ".gitignore")
    assert cfg.model_dump(mode="json")["protected"] == list(dumped["protected"])
    assert EvolveConfig.model_validate(dumped) == cfg
    assert cfg.caps["ace"].model_fields_set == {"chars"}
    assert cfg.caps_for("ace", RecipeCaps(units=5, chars=400)) == RecipeCaps(units=5, chars=80)
    models = cfg.models.model_copy(update={"agent": "mock"})
    assert (models.agent, cfg.models.agent) == ("mock", "sim")
    with pytest.raises(Invalid) as info:
        cfg.models.model_validate({**cfg.models.model_dump(), "timeout_s": -1})
    assert info.value.errors()[0]["loc"] == ("timeout_s",)
    assert str(info.value) == (  # a traceback reads as pydantic's did
        "1 validation error for ModelRoles\ntimeout_s\n  Input should be greater than 0 "
        "[type=greater_than, input_value=-1, input_type=int]"
    )
    with pytest.raises(AttributeError):
        cfg.run.runs = 2  # type: ignore[misc]
    assert hash(cfg.run) == hash(parse_config("").run)


def test_a_directly_built_section_knows_the_fields_it_changed() -> None:
    assert RecipeCaps(units=3).model_fields_set == {"units"}
    assert RecipeCaps().model_copy(update={"chars": 9}).model_fields_set == {"chars"}
    assert ParameterRange(min=1.0, max=2.0).model_fields_set == {"min", "max"}


def test_bad_yaml_is_still_a_config_error_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    path = tmp_path / CONFIG_NAME
    path.write_text("models:\n  agent: [sim\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"is not valid YAML at line \d"):
        load_config(path)
    assert not os.path.exists(tmp_path / ".git" / YAML_CACHE)
