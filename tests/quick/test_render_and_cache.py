"""Light renderers against the recipes' own, and the configuration cache `evolve memory` keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evolve._format._units import Unit
from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.memory import MemoryUnit
from evolve.quick._render import RENDERERS
from evolve.updaters import RECIPES, get_recipe
from evolve.workspace import Workspace
from factories import count_full_parses


def _units(recipe: str) -> list[MemoryUnit]:
    out = []
    for i in range(12):
        fields: dict[str, Any] = {
            "id": f"{recipe}-{i:02d}",
            "recipe": recipe,
            "kind": "document" if recipe == "rewrite" and i % 2 else "bullet",
            "status": ["active", "active", "revoked", "pending"][i % 4],
            "valid_from": None
            if i % 5 == 0
            else f"2026-01-{12 - i:02d}T0{i % 3}:00:00+0{i % 2}:00",
            "text": f"- statement {i}\n  * detail {i}\n\n",
        }
        if recipe == "tepa":
            fields["key"] = f"k{i % 3}"
        if recipe == "topl":
            fields["alpha"] = float(1 + i % 4)
            fields["beta"] = float(1 + i % 3)
        out.append(MemoryUnit.model_validate(fields))
    return out


@pytest.mark.parametrize("recipe", sorted(RENDERERS))
def test_light_renderers_render_as_the_recipes_do(recipe: str) -> None:
    units = _units(recipe)
    want = get_recipe(recipe).render(units)
    assert RENDERERS[recipe]([Unit.of(u) for u in units]) == want
    assert want  # the case is not empty


def test_every_recipe_has_a_light_renderer_or_goes_to_the_full_command() -> None:
    # A recipe added without a light copy is rendered by the full command (Unhandled).
    assert set(RENDERERS) <= set(RECIPES)


def _config(ws: Workspace) -> Path:
    return ws.root / "evolve.yaml"


def test_the_configuration_is_validated_once_per_content_and_changes_are_seen(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = ws.store.git_dir / "evolve-config.cache"
    assert _fast.run(["memory"]) == 0
    assert cache.is_file() and "memory for user:alex" in capsys.readouterr().out
    text = _config(ws).read_text(encoding="utf-8")
    # Same size, same second: the content is the key, not the file's times.
    _config(ws).write_text(text.replace("persona: alex ", "persona: bobo "), encoding="utf-8")
    assert _fast.run(["memory"]) == 0
    assert "memory for user:bobo" in capsys.readouterr().out
    _config(ws).write_text(text.replace("persona: alex ", "persona: Alex!"), encoding="utf-8")
    assert _fast.run(["memory"]) is None  # invalid: the full command says why
    assert run_click(["memory"]) == 1 and "persona" in capsys.readouterr().err
    _config(ws).write_text(text, encoding="utf-8")
    assert _fast.run(["memory"]) == 0
    assert "memory for user:alex" in capsys.readouterr().out


def test_a_corrupt_or_foreign_cache_is_ignored(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = ws.store.git_dir / "evolve-config.cache"
    for junk in (b"", b"\x00\x01garbage", b"\xe9\x00\x00\x00"):
        cache.write_bytes(junk)
        assert _fast.run(["memory", "--json"]) == 0
        assert '"scope": "user:alex"' in capsys.readouterr().out


HAND_EDITED = (
    "---\n# edited by hand\nid: odd-1\nrecipe: ace\nkind: bullet\nscope: user:alex\n---\n{}\n"
)


def _memory(capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert _fast.run(["memory"]) == 0
    fast = capsys.readouterr().out
    assert run_click(["memory"]) == 0
    assert capsys.readouterr().out == fast
    return fast


def test_a_file_the_canonical_parser_leaves_is_fully_parsed_once_and_edits_are_seen(
    ws: Workspace, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    calls = count_full_parses(monkeypatch)
    path = ws.root / "memory" / "alex" / "odd-1.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HAND_EDITED.format("Pay on the 1st."), encoding="utf-8")
    assert "Pay on the 1st." in _memory(capsys)
    assert calls == ["memory/alex/odd-1.md"]  # the fast path's first read: the full parser
    calls.clear()
    assert "Pay on the 1st." in _memory(capsys)
    assert calls == []  # then the cache (the click command parses with its own import)
    # A hand edit of the same size, its modification time set back: still seen (the ctime,
    # which no edit can set back, moved).
    st = path.stat()
    path.write_text(HAND_EDITED.format("Pay on the 2nd."), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    out = _memory(capsys)
    assert "Pay on the 2nd." in out and "Pay on the 1st." not in out
    assert calls == ["memory/alex/odd-1.md"]


def test_a_file_changed_just_now_is_not_remembered(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    path = ws.root / "memory" / "alex" / "odd-1.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HAND_EDITED.format("Pay on the 1st."), encoding="utf-8")
    _memory(capsys)
    cache = ws.store.git_dir / "evolve-units.cache"
    assert not cache.exists()  # racy: it could change again without its times moving


def test_learned_time_is_the_same_from_its_cache() -> None:
    """The parsed `valid_from` is cached by string: the second read is the first's value."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from evolve._format._render import learned_time

    cases = {
        "2026-01-03T00:00:00Z": datetime(2026, 1, 3, tzinfo=UTC),
        "2026-01-03T01:00:00+01:00": datetime(2026, 1, 3, tzinfo=UTC),
        "2026-01-03": datetime(2026, 1, 3, tzinfo=UTC),
        "not a date": datetime.min.replace(tzinfo=UTC),
        "": datetime.min.replace(tzinfo=UTC),
    }
    for _ in range(2):
        for text, expected in cases.items():
            assert learned_time(SimpleNamespace(valid_from=text)) == expected
