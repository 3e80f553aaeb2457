"""Memory unit files: canonical serialization, malformed files, hand notes, rendering."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve.applier import MemoryApplier, Op
from evolve.memory import (
    MalformedUnit,
    MemoryUnit,
    UnitReader,
    dump_unit,
    load_units,
    parse_unit,
    without_counters,
)
from evolve.updaters import RECIPES, render_for
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"


def render_memory(units: list[MemoryUnit], scope: str) -> str:
    """Rendered memory of a workspace configured to render every recipe."""
    return render_for(units, scope, RECIPES)


# The fixed order of front-matter keys (text is the body, never a key).
KEY_ORDER = [
    "id",
    "schema",
    "recipe",
    "kind",
    "status",
    "scope",
    "created_episode",
    "updated_episode",
    "valid_from",
    "valid_to",
    "key",
    "revoked_at",
    "revoked_by",
    "api",
    "argument",
    "predicate",
    "value",
    "supersedes",
    "reason",
    "reverted_commit",
    "source_task",
    "complaint",
]


_unit = partial(memory_unit, text="Sign every text with my first name.")


def _front_keys(text: str) -> list[str]:
    assert text.startswith("---\n")
    front = text[4 : text.index("\n---\n") + 1]
    return [line.split(":", 1)[0] for line in front.splitlines() if line and not line[0].isspace()]


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def _commit_all(root: Path, run_git: RunGit, message: str = "hand edit") -> None:
    run_git(root, "add", "-A", "memory")
    run_git(root, "commit", "-q", "-m", message)


# --- canonical serialization ---------------------------------------------------------------


def test_dump_parse_dump_is_identical_for_a_full_unit() -> None:
    unit = _unit(
        status="revoked",
        created_episode=3,
        updated_episode=7,
        valid_from="2026-01-01T00:00:00+00:00",
        valid_to="2026-01-02T00:00:00+00:00",
        helpful=2,
        harmful=1,
        key="sms.signoff",
        revoked_at=7,
        revoked_by="u-2",
        api="phone__send_text_message",
        argument="message",
        predicate="endswith",
        value="-Alex",
        alpha=2.0,
        beta=3.5,
        supersedes="u-0",
        reason="reverted: wrong",
        reverted_commit="0123456789abcdef",
        source_task="text_update-1",
        complaint="My texts didn't end with my name: see 'x'",
        text="Line one.\n\n  - an indented item\nLast line: with a colon",
    )
    text = dump_unit(unit)
    again = parse_unit("memory/alex/u-1.md", text)
    # Counters belong to the sidecar (memory/alex/_counters.yaml), never to the unit file.
    assert again == without_counters(unit)
    assert "helpful" not in text and "alpha" not in text
    assert dump_unit(again) == text
    assert _front_keys(text) == KEY_ORDER
    assert text.endswith("\nLast line: with a colon\n")
    assert not text.endswith("\n\n")


def test_key_order_is_fixed_whatever_order_fields_were_given_in() -> None:
    a = MemoryUnit.model_validate(
        {"text": "x", "scope": ALEX, "kind": "bullet", "recipe": "ace", "id": "u-1", "helpful": 1}
    )
    b = MemoryUnit.model_validate(
        {"helpful": 1, "id": "u-1", "recipe": "ace", "kind": "bullet", "scope": ALEX, "text": "x"}
    )
    assert dump_unit(a) == dump_unit(b)
    assert _front_keys(dump_unit(a)) == [
        "id",
        "schema",
        "recipe",
        "kind",
        "status",
        "scope",
    ]


def test_empty_fields_are_left_out_and_text_is_stripped() -> None:
    text = dump_unit(_unit(text="\n\n  body  \n\n"))
    assert text == (
        "---\nid: u-1\nschema: 1\nrecipe: ace\nkind: bullet\nstatus: active\n"
        "scope: user:alex\n---\nbody\n"
    )


_FIELD_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\r")
    | st.sampled_from(["\n", "-", ":", " ", "#", "'", '"', "{", "[", "|", ">"]),
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_FIELD_TEXT, reason=_FIELD_TEXT, complaint=_FIELD_TEXT, value=_FIELD_TEXT)
def test_round_trip_property(text: str, reason: str, complaint: str, value: str) -> None:
    unit = _unit(text=text, reason=reason or None, complaint=complaint or None, value=value or None)
    dumped = dump_unit(unit)
    parsed = parse_unit("memory/alex/u-1.md", dumped)
    assert parsed == unit.with_(text=unit.text.strip())
    assert dump_unit(parsed) == dumped


def test_an_unchanged_unit_produces_no_diff(workspace: Workspace, run_git: RunGit) -> None:
    units = [
        _unit(id="u-1", helpful=0, harmful=0, created_episode=0, text="First."),
        _unit(id="u-2", recipe="tepa", kind="precedent", key="sms.signoff", text="Second."),
    ]
    applier = MemoryApplier(workspace, ALEX)
    result = applier.apply([Op(op="add", unit=u) for u in units], [])
    assert not result.refused
    workspace.store.commit(result.paths, "add two units")
    applier.done()
    # Read them back and write them again unchanged: no byte differs, git sees nothing.
    loaded = load_units(workspace.root)
    assert {u.id for u in loaded} == {"u-1", "u-2"}
    for unit in loaded:
        path = workspace.root / unit.path()
        assert dump_unit(unit) == path.read_text(encoding="utf-8")
        path.write_text(dump_unit(parse_unit(str(unit.path()), path.read_text("utf-8"))), "utf-8")
    again = applier.apply([Op(op="modify", unit=u) for u in loaded], loaded)
    assert not again.refused
    applier.done()
    assert run_git(workspace.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert workspace.store.commit(again.paths, "no change") is None


# --- malformed files ----------------------------------------------------------------------

_GOOD_FRONT = "id: u-1\nrecipe: ace\nkind: bullet\nscope: user:alex\n"

MALFORMED = {
    "bad yaml": ("memory/alex/u-1.md", "---\nid: [unclosed\nrecipe: ace\n---\ntext\n", "YAML"),
    "unknown field": ("memory/alex/u-1.md", f"---\n{_GOOD_FRONT}colour: blue\n---\nx\n", "colour"),
    "wrong type": (
        "memory/alex/u-1.md",
        f"---\n{_GOOD_FRONT}created_episode: soon\n---\nx\n",
        "created_episode",
    ),
    "fractional int": (
        "memory/alex/u-1.md",
        f"---\n{_GOOD_FRONT}created_episode: 1.5\n---\nx\n",
        "created_episode",
    ),
    "negative counter": (
        "memory/alex/u-1.md",
        f"---\n{_GOOD_FRONT}helpful: -1\n---\nx\n",
        "helpful",
    ),
    "unknown status": (
        "memory/alex/u-1.md",
        f"---\n{_GOOD_FRONT}status: archived\n---\nx\n",
        "status",
    ),
    "missing kind": (
        "memory/alex/u-1.md",
        "---\nid: u-1\nrecipe: ace\nscope: user:alex\n---\nx\n",
        "kind",
    ),
    "not a mapping": ("memory/alex/u-1.md", "---\n- a\n- b\n---\nx\n", "mapping"),
    "text in front": ("memory/alex/u-1.md", f"---\n{_GOOD_FRONT}text: hi\n---\nx\n", "text"),
    "unclosed front matter": (
        "memory/alex/u-1.md",
        f"---\n{_GOOD_FRONT}\nbody without end\n",
        "closed",
    ),
    "scope not matching folder": (
        "memory/blair/u-1.md",
        f"---\n{_GOOD_FRONT}---\nx\n",
        "does not match its folder",
    ),
    "user scope in global folder": ("memory/u-1.md", f"---\n{_GOOD_FRONT}---\nx\n", "folder"),
    "bad scope": (
        "memory/alex/u-1.md",
        "---\nid: u-1\nrecipe: ace\nkind: bullet\nscope: alex\n---\nx\n",
        "scope",
    ),
    "file name not matching id": ("memory/alex/u-2.md", f"---\n{_GOOD_FRONT}---\nx\n", "file name"),
    "bad id": (
        "memory/alex/u-1.md",
        "---\nid: ../u-1\nrecipe: ace\nkind: bullet\nscope: user:alex\n---\nx\n",
        "id",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_file_raises_naming_the_path(case: str) -> None:
    path, raw, mentions = MALFORMED[case]
    with pytest.raises(MalformedUnit) as info:
        parse_unit(path, raw)
    message = str(info.value)
    assert message.startswith(f"{path}:"), message
    assert mentions in message, message


@pytest.mark.parametrize("case", ["bad yaml", "unknown field", "scope not matching folder"])
def test_malformed_file_in_a_workspace_is_reported_and_never_rewritten(
    workspace: Workspace, run_git: RunGit, case: str
) -> None:
    from evolve.train import train

    rel, raw, _ = MALFORMED[case]
    path = _write(workspace.root, rel, raw)
    _commit_all(workspace.root, run_git, "a broken unit")
    head = workspace.store.head()
    with pytest.raises(MalformedUnit, match=rel):
        UnitReader(workspace.root).load()
    with pytest.raises(MalformedUnit, match=rel):
        train(workspace, recipe="ace", episodes=3)
    assert path.read_bytes() == raw.encode("utf-8")
    assert workspace.store.head() == head
    assert run_git(workspace.root, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize(
    "line", ["helpful: true", "created_episode: '3'"], ids=["bool-for-int", "string-for-int"]
)
def test_wrong_scalar_type_is_not_coerced(line: str) -> None:
    with pytest.raises(MalformedUnit):
        parse_unit("memory/alex/u-1.md", f"---\n{_GOOD_FRONT}{line}\n---\nx\n")


def test_nested_unit_in_another_users_folder_is_malformed() -> None:
    with pytest.raises(MalformedUnit, match="memory/blair/sub/u-1.md"):
        parse_unit("memory/blair/sub/u-1.md", f"---\n{_GOOD_FRONT}---\nx\n")


# --- hand-written notes ---------------------------------------------------------------------


def test_hand_written_note_without_front_matter_renders_as_is(workspace: Workspace) -> None:
    note = "Things to know about Alex:\n\n* prefers mornings\n* signs texts '-Alex'"
    _write(workspace.root, "memory/alex/about-alex.md", note + "\n")
    _write(workspace.root, "memory/house-rules.md", "Never share passwords.\n")
    units = load_units(workspace.root)
    hand = {u.id: u for u in units}
    assert hand["about-alex"].recipe == "hand" and hand["about-alex"].scope == ALEX
    assert hand["house-rules"].scope == "global"
    rendered = render_memory(units, ALEX)
    # Every line carries the note's id, so it maps back to its file.
    assert (
        "[about-alex] Things to know about Alex:\n[about-alex] prefers mornings\n"
        "[about-alex] signs texts '-Alex'"
    ) in rendered
    assert "[house-rules] Never share passwords." in rendered
    # Hand notes are rendered before anything a learner wrote.
    learned = _unit(id="u-9", text="A learned bullet.", created_episode=0)
    rendered = render_memory([*units, learned], ALEX)
    assert rendered.index("Things to know") < rendered.index("A learned bullet.")
    # Another user's note is not Alex's memory; the file was not changed by reading it.
    assert "prefers mornings" not in render_memory(units, "user:blair")
    assert (workspace.root / "memory/alex/about-alex.md").read_text("utf-8") == note + "\n"


@pytest.mark.parametrize(
    "name",
    [
        "todo.md",
        "my notes.md",
        "_todo.md",
        "-draft.md",
        pytest.param("ünïcode.md", id="non-ascii.md"),
        pytest.param("n" * 90 + ".md", id="long-name.md"),
    ],
)
def test_any_hand_note_file_name_is_read(workspace: Workspace, name: str) -> None:
    _write(workspace.root, f"memory/alex/{name}", "Buy milk on Fridays.\n")
    (unit,) = load_units(workspace.root)
    assert unit.recipe == "hand" and unit.scope == ALEX
    assert "Buy milk on Fridays." in render_memory([unit], ALEX)


def test_hand_notes_whose_names_differ_only_in_punctuation_are_both_read(
    workspace: Workspace,
) -> None:
    _write(workspace.root, "memory/alex/my notes.md", "First note.\n")
    _write(workspace.root, "memory/alex/my-notes.md", "Second note.\n")
    units = load_units(workspace.root)
    assert len({u.id for u in units}) == 2
    rendered = render_memory(units, ALEX)
    assert "First note." in rendered and "Second note." in rendered


def test_nested_hand_note_of_another_user_is_not_rendered(workspace: Workspace) -> None:
    _write(workspace.root, "memory/blair/private/secret.md", "Blair's bank PIN hint.\n")
    units = load_units(workspace.root)
    assert "Blair's bank PIN" not in render_memory(units, ALEX)
    assert "Blair's bank PIN" in render_memory(units, "user:blair")


def test_unit_with_crlf_line_endings_is_read_from_the_working_tree(workspace: Workspace) -> None:
    unit = _unit(id="u-1", status="revoked", text="Old revoked preference.")
    _write(workspace.root, "memory/alex/u-1.md", dump_unit(unit).replace("\n", "\r\n"))
    (loaded,) = load_units(workspace.root)
    assert loaded == unit
    assert render_memory([loaded], ALEX) == ""


def test_as_of_read_of_a_crlf_unit_agrees_with_the_working_tree(
    workspace: Workspace, run_git: RunGit
) -> None:
    from evolve.memory import load_units_at

    unit = _unit(id="u-1", status="revoked", text="Old revoked preference.")
    _write(workspace.root, "memory/alex/u-1.md", dump_unit(unit).replace("\n", "\r\n"))
    _commit_all(workspace.root, run_git, "a unit saved by a CRLF editor")
    at_head = load_units_at(workspace.store, "HEAD")
    assert at_head == load_units(workspace.root)
    assert render_memory(at_head, ALEX) == ""


# --- rendering --------------------------------------------------------------------------------


def test_render_shows_only_active_units_in_scope() -> None:
    units = [
        _unit(id="a-1", text="ACTIVE alex bullet.", created_episode=1),
        _unit(id="a-2", status="pending", text="PENDING alex bullet."),
        _unit(id="a-3", status="revoked", text="REVOKED alex bullet."),
        _unit(id="a-4", status="tombstoned", text="TOMBSTONED alex bullet."),
        _unit(id="b-1", scope="user:blair", text="ACTIVE blair bullet."),
        _unit(id="g-1", scope="global", recipe="hand", kind="note", text="GLOBAL note."),
        _unit(id="t-1", recipe="tepa", kind="precedent", key="sms.signoff", text="TEPA alex."),
        _unit(
            id="t-2",
            recipe="tepa",
            kind="precedent",
            key="sms.signoff",
            status="revoked",
            text="TEPA revoked.",
        ),
    ]
    rendered = render_memory(units, ALEX)
    for shown in ("ACTIVE alex bullet.", "GLOBAL note.", "TEPA alex."):
        assert shown in rendered
    for hidden in ("PENDING", "REVOKED", "TOMBSTONED", "blair", "TEPA revoked."):
        assert hidden not in rendered
    # Recipes render in their own way: ACE shows ids, TEPA keys.
    assert "[a-1] ACTIVE alex bullet." in rendered
    assert "[t-1] [sms.signoff] TEPA alex." in rendered
    blair = render_memory(units, "user:blair")
    assert "ACTIVE blair bullet." in blair and "alex" not in blair
    assert "GLOBAL note." in blair


def test_render_is_a_function_of_the_files(workspace: Workspace) -> None:
    applier = MemoryApplier(workspace, ALEX)
    unit = _unit(id="u-1", text="Sign texts with -Alex.", created_episode=0)
    applier.apply([Op(op="add", unit=unit)], [])
    applier.done()
    reader = UnitReader(workspace.root)
    assert "Sign texts with -Alex." in render_memory(reader.load(), ALEX)
    # A hand edit of the file (revoking the unit) is seen by the very next read.
    path = workspace.root / "memory/alex/u-1.md"
    path.write_text(dump_unit(unit.with_(status="revoked")), "utf-8")
    assert "Sign texts" not in render_memory(reader.load(), ALEX)
    path.unlink()
    assert reader.load() == []
