"""The evalset's YAML is parsed once per process while unchanged, and again once edited."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evolve.envs.persona_world import PersonaWorldEnv
from evolve.envs.persona_world import _env as env_module

EVALSET = Path(__file__).resolve().parents[2] / "evalset"


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = yaml.load

    def load(stream: Any, Loader: Any) -> Any:  # noqa: N803 - yaml's own keyword
        seen.append(str(stream)[:20])
        return real(stream, Loader=Loader)

    monkeypatch.setattr(yaml, "load", load)
    return seen


def test_unchanged_evalset_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evalset = tmp_path / "evalset"
    shutil.copytree(EVALSET, evalset)
    parsed = _counting(monkeypatch)
    first = PersonaWorldEnv(evalset)
    after_first = len(parsed)
    assert after_first >= 2  # tasks.yaml and splits.yaml
    second = PersonaWorldEnv(evalset)
    assert len(parsed) == after_first
    assert [t.id for t in first.tasks("dev")] == [t.id for t in second.tasks("dev")]


def test_an_edited_file_is_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evalset = tmp_path / "evalset"
    shutil.copytree(EVALSET, evalset)
    PersonaWorldEnv(evalset)
    splits_file = evalset / "splits.yaml"
    splits = yaml.safe_load(splits_file.read_text(encoding="utf-8"))
    moved = splits["dev"].pop()
    splits["holdout"].append(moved)
    splits_file.write_text(yaml.safe_dump(splits), encoding="utf-8")
    st = splits_file.stat()
    os.utime(splits_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    env = PersonaWorldEnv(evalset)
    assert moved in [t.id for t in env.tasks("holdout")]
    assert moved not in [t.id for t in env.tasks("dev")]


def test_callers_cannot_change_the_cached_document(tmp_path: Path) -> None:
    evalset = tmp_path / "evalset"
    shutil.copytree(EVALSET, evalset)
    first = env_module._load_yaml(evalset / "splits.yaml")
    first["dev"].clear()
    again = env_module._load_yaml(evalset / "splits.yaml")
    assert again["dev"], "a caller's mutation leaked into the cache"


def test_the_c_loader_is_used_when_libyaml_is_there() -> None:
    from evolve.envs.persona_world import _yaml

    assert issubclass(_yaml._LOADER, getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def test_an_edited_file_replaces_its_old_version_in_the_cache(tmp_path: Path) -> None:
    from evolve.envs.persona_world import _yaml

    doc = tmp_path / "doc.yaml"
    for n in range(5):
        doc.write_text(f"value: {n}\n", encoding="utf-8")
        os.utime(doc, ns=(n * 1_000_000_000, n * 1_000_000_000))
        assert _yaml.load_yaml(doc) == {"value": n}
    assert [k for k in _yaml._PARSED if k[0] == str(doc.resolve())] == [
        (str(doc.resolve()), 4_000_000_000, len("value: 4\n"))
    ]
