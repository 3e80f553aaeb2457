"""Issue 8 items 2, 3, 9 and 11: learned order, the counter sidecar, one recipe rendered with
an id on every line, and no render registry filled by an import."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from evolve.applier import MemoryApplier
from evolve.evaluate import agent_memory, open_env
from evolve.llm import Message
from evolve.llm._mock import MockLLM
from evolve.memory import (
    MalformedUnit,
    MemoryUnit,
    dump_unit,
    load_units,
    load_units_at,
    parse_counters,
    render_memory,
)
from evolve.ops import Op
from evolve.sim._agent import read_directives
from evolve.train import train
from evolve.updaters import RECIPES, EpisodeView, RecipeContext, get_recipe, render_for
from evolve.workspace import Workspace, parse_config
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"


# --- item 2: order by when it was learned ---------------------------------------------------


def test_order_is_learned_time_across_streams_not_the_episode_counter() -> None:
    # Stream 1 learned "private" at its episode 20; stream 2, started later, learned
    # "friends" at its own episode 3. The newer one must render last (the sim: last wins).
    old = memory_unit("ace-zzz", "Make payments private.", created_episode=20, valid_from="2026-01-01T10:00:00+00:00")  # fmt: skip
    new = memory_unit("ace-aaa", "Make payments friends-only.", created_episode=3, valid_from="2026-01-02T09:00:00.000001+00:00")  # fmt: skip
    rendered = render_for([new, old], ALEX, ["ace"])
    assert rendered.splitlines() == [f"[ace-zzz] {old.text}", f"[ace-aaa] {new.text}"]
    assert read_directives(rendered)["payment.visibility"].value == "friends"
    # Mixed precision and offsets compare as times, not strings.
    east = memory_unit("ace-b", "B.", valid_from="2026-01-02T10:00:00+01:00")  # 09:00 UTC
    assert render_for([new, east], ALEX, ["ace"]).splitlines()[0] == "[ace-b] B."


def _ctx(units: Sequence[MemoryUnit], reply: dict[str, Any], now: str) -> RecipeContext:
    return RecipeContext(
        units=list(units),
        scope=ALEX,
        episode=EpisodeView(1, "t-1", "Pay Sam.", "", "Payments.", False),
        llm=MockLLM([json.dumps(reply)]),
        seed=0,
        now=now,
    )


def test_a_reactivation_moves_last_and_units_of_one_episode_keep_their_order() -> None:
    same_second = "2026-01-01T00:00:00+00:00"
    a = memory_unit("ace-a", "Sign texts with '- Alex'.", valid_from=same_second, status="revoked", revoked_by="ace-b")  # fmt: skip
    b = memory_unit("ace-b", "Sign texts with '- A'.", valid_from=same_second)
    c = memory_unit("ace-c", "Pay with the Visa.", valid_from="2026-01-01T00:00:00.5+00:00")
    # The clock says the same second as the memory it reads (a fast stream): still later.
    ctx = _ctx([a, b, c], {"operations": [
        {"op": "add", "text": "Sign texts with '- Alex'."},
        {"op": "add", "text": "Open texts with 'Hi'."},
        {"op": "add", "text": "Copy me on e-mails."},
    ]}, now=same_second)  # fmt: skip
    update = get_recipe("ace").observe(ctx)
    state = {u.id: u for u in [a, b, c]} | {op.id: op.unit for op in update.ops}
    lines = render_for(state.values(), ALEX, ["ace"]).splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == [
        "Pay with the Visa.",
        "Sign texts with '- Alex'.",  # reactivated: learned again now
        "Open texts with 'Hi'.",
        "Copy me on e-mails.",  # same episode: the order the recipe made them
    ]
    stamps = [state[line[1 : line.index("]")]].valid_from or "" for line in lines]
    assert all("." in s and s.endswith("+00:00") for s in stamps[1:])


# --- item 9: one recipe, ids on every line --------------------------------------------------


def test_every_recipes_lines_carry_their_unit_id() -> None:
    units = [
        memory_unit("ace-1", "Ace line."),
        memory_unit("tepa-1", "Tepa line.", recipe="tepa", kind="precedent", key="sms.signoff"),
        memory_unit("trace-1", "Trace line.", recipe="trace", kind="check"),
        memory_unit("reflexion-1", "Reflexion line.", recipe="reflexion", kind="reflection"),
        memory_unit(
            "rewrite-document", "Line one.\n- Line two.", recipe="rewrite", kind="document"
        ),
        memory_unit("topl-1", "Topl line.", recipe="topl", kind="assertion"),
        memory_unit("note", "A hand note.\n* second line", recipe="hand", kind="note"),
    ]
    for recipe in RECIPES:
        lines = render_for(units, ALEX, [recipe]).splitlines()
        mine = [u for u in units if u.recipe in (recipe, "hand")]
        assert lines and all(line.startswith("[") for line in lines), recipe
        ids = {line[1 : line.index("]")] for line in lines}
        assert ids == {u.id for u in mine}, recipe


def test_a_workspace_renders_hand_notes_and_its_configured_recipes_only(
    workspace: Workspace,
) -> None:
    applier = MemoryApplier(workspace, ALEX)
    units = [
        memory_unit("ace-1", "Sign texts with '- Alex'."),
        memory_unit(
            "tepa-1", "Sign texts with '- A'.", recipe="tepa", kind="precedent", key="sms.signoff"
        ),
    ]
    applier.apply([Op(op="add", unit=u) for u in units], [])
    applier.done()
    (workspace.root / "memory/alex/mine.md").write_text("Pay with the Visa.\n", "utf-8")
    env = open_env(workspace)
    rendered = agent_memory(workspace, env, "alex", "recipe")
    assert rendered.splitlines() == [
        "[mine] Pay with the Visa.",
        "[ace-1] Sign texts with '- Alex'.",
    ]
    cfg = parse_config("render:\n  recipes: [tepa, ace]\n")
    assert cfg.rendered_recipes() == ("tepa", "ace")
    assert parse_config("train:\n  recipe: topl\n").rendered_recipes() == ("topl",)
    both = agent_memory(Workspace(workspace.root, cfg), env, "alex", "recipe")
    assert "[tepa-1] [sms.signoff] Sign texts with '- A'." in both and "[ace-1]" in both


def test_the_sim_reads_statements_with_ids_and_keys() -> None:
    memory = "\n".join(
        [
            "[tepa-1] [email.subject] Start email subjects with [Home].",
            "[ace-1] Payments should be private. [ace-2] not a statement",
            "- [note] Close every email with 'Warmly,'.",
        ]
    )
    found = read_directives(f"<memory>\n{memory}\n</memory>\n")
    assert found["email.subject_prefix"].value == "[Home]"
    assert found["payment.visibility"].value == "private"
    assert found["email.signoff"].value == "Warmly"


# --- item 11: no registry filled by an import -----------------------------------------------


def test_rendering_without_importing_updaters_fails_loudly() -> None:
    code = (
        "import sys\n"
        "from evolve.memory import MemoryUnit, render_memory\n"
        "import evolve.memory as m\n"
        "assert 'evolve.updaters' not in sys.modules\n"
        "assert not hasattr(m, 'RENDERERS') and not hasattr(m, 'register_renderer')\n"
        "u = MemoryUnit(id='tepa-1', recipe='tepa', kind='precedent', scope='user:alex',\n"
        "               key='sms.signoff', text='Sign texts.')\n"
        "try:\n"
        "    render_memory([u], 'user:alex')\n"
        "except TypeError as exc:\n"
        "    print('loud:', exc)\n"
        "else:\n"
        "    raise SystemExit('rendered without a renderer')\n"
        "from evolve.updaters import renderers_for\n"
        "print(render_memory([u], 'user:alex', renderers_for(['tepa'])))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "loud:" in out
    assert "[tepa-1] [sms.signoff] Sign texts." in out


def test_render_memory_refuses_a_non_mapping() -> None:
    with pytest.raises(TypeError):
        render_memory([], ALEX, ["ace"])  # type: ignore[arg-type]


# --- item 3: counters apart from content ----------------------------------------------------


class _Tagger:
    """An ACE updater: adds one bullet once, then only tags every bullet it sees helpful."""

    def __init__(self) -> None:
        self.added = False

    def __call__(self, messages: Sequence[Message], schema: Any) -> str:
        import re

        ids = re.findall(r"^\[(ace-[0-9a-f]{10})\]", messages[-1].content, re.M)
        ops = [] if self.added else [{"op": "add", "text": "Keep all my Venmo payments public."}]
        self.added = True
        tags = [{"id": i, "tag": "harmful"} for i in ids]
        return json.dumps({"operations": ops, "bullet_tags": tags})


def test_counter_moves_do_not_touch_unit_files(workspace: Workspace, run_git: RunGit) -> None:
    report = train(workspace, recipe="ace", episodes=6, updater_llm=MockLLM(_Tagger()))
    assert len(report.commits) >= 3
    (unit,) = [u for u in load_units(workspace.root) if u.recipe == "ace"]
    path = f"memory/alex/{unit.id}.md"
    # The unit file has one commit (its birth); the counters moved in the sidecar only.
    assert run_git(workspace.root, "log", "--format=%H", "--", path).split() == [report.commits[0]]
    for sha in report.commits[1:]:
        changed = run_git(workspace.root, "show", "--name-only", "--format=", sha).split()
        assert changed == ["memory/alex/_counters.yaml"]
    text = (workspace.root / path).read_text("utf-8")
    assert "harmful" not in text and text == dump_unit(unit)
    assert unit.harmful == len(report.commits) - 1 and unit.helpful == 0
    sidecar = parse_counters("x", (workspace.root / "memory/alex/_counters.yaml").read_text())
    assert sidecar == {unit.id: {"harmful": unit.harmful, "helpful": 0}}
    # As-of reads overlay the sidecar of that commit.
    assert load_units_at(workspace.store, report.commits[1])[0].harmful == 1


def test_old_unit_files_with_counters_are_read_and_migrate_on_write(
    workspace: Workspace,
) -> None:
    folder = workspace.root / "memory/alex"
    folder.mkdir(parents=True)
    old = (
        "---\nid: topl-a\nschema: 1\nrecipe: topl\nkind: assertion\nstatus: active\n"
        "scope: user:alex\nalpha: 3.0\nbeta: 2.0\n---\nPay with the Visa.\n"
    )
    (folder / "topl-a.md").write_text(old, "utf-8")
    (unit,) = load_units(workspace.root)
    assert (unit.alpha, unit.beta) == (3.0, 2.0)  # the file's counters, no sidecar yet
    applier = MemoryApplier(workspace, ALEX)
    result = applier.apply([Op(op="count", unit=unit.with_(alpha=4.0))], [unit])
    applier.done()
    assert result.paths == ["memory/alex/_counters.yaml"]
    assert (folder / "topl-a.md").read_text("utf-8") == old  # untouched
    (unit,) = load_units(workspace.root)
    assert (unit.alpha, unit.beta) == (4.0, 2.0)  # the sidecar wins
    applier.apply([Op(op="revoke", unit=unit.with_(status="revoked"))], [unit])
    applier.done()
    assert "alpha" not in (folder / "topl-a.md").read_text("utf-8")  # migrated on write
    (unit,) = load_units(workspace.root)
    assert (unit.alpha, unit.beta, unit.status) == (4.0, 2.0, "revoked")


def test_a_count_op_cannot_change_content_and_evict_drops_the_entry(
    workspace: Workspace,
) -> None:
    applier = MemoryApplier(workspace, ALEX)
    unit = memory_unit("ace-a", "Pay with the Visa.", helpful=2, harmful=0)
    applier.apply([Op(op="add", unit=unit)], [])
    applier.done()
    assert parse_counters("x", (workspace.root / "memory/alex/_counters.yaml").read_text()) == {
        "ace-a": {"harmful": 0, "helpful": 2}
    }
    (unit,) = load_units(workspace.root)
    bad = applier.apply([Op(op="count", unit=unit.with_(text="Other.", helpful=3))], [unit])
    assert bad.applied == [] and "only the unit's counters" in bad.refused[0].reason
    applier.apply([Op(op="evict", unit=unit)], [unit])
    applier.done()
    assert not (workspace.root / "memory/alex/_counters.yaml").exists()


@pytest.mark.parametrize(
    "raw", ["- a\n", "ace-a: 3\n", "ace-a: {bogus: 1}\n", "ace-a: {helpful: -1}\n", "x: [\n"]
)
def test_a_malformed_sidecar_is_reported(raw: str) -> None:
    with pytest.raises(MalformedUnit, match="memory/alex/_counters.yaml"):
        parse_counters("memory/alex/_counters.yaml", raw)
