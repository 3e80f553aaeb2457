"""A hand-edited skill counter sidecar (`memory/skills/.../_counters.yaml`, issue 13): counts
that cannot be episodes get the per-task record's sentence from every command that reads the
counters, never a traceback (a pass rate above 1 has no Wilson interval) nor a figure such
as "300% pass"."""

from __future__ import annotations

import pytest
from test_skills_command import _plant

from conftest import GitRunner, run_cli
from evolve.errors import EvolveError
from evolve.memory import MalformedUnit, parse_counters
from evolve.skills._strata import parse_strata
from evolve.workspace import Workspace

SIDECAR = "memory/skills/topics/venmo/_counters.yaml"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("venmo-lookup: {held_out: 1, held_out_pass: 7, injected: 2, injected_pass: 0}\n",
         "has more passes than episodes."),
        ("venmo-lookup: {held_out: 0, held_out_pass: 0, injected: 1, injected_pass: 3}\n",
         "has more passes than episodes."),
        ("venmo-lookup: {injected_pass: 1}\n", "has more passes than episodes."),
        (f"venmo-lookup: {{injected: {10**23}, injected_pass: 0}}\n",
         "has counts too large to be episodes."),
    ],
)  # fmt: skip
@pytest.mark.parametrize("args", [("skills",), ("skills", "--json"), ("report",)])
def test_counts_that_cannot_be_episodes_are_one_sentence(
    ws: Workspace,
    run_git: GitRunner,
    capsys: pytest.CaptureFixture[str],
    text: str,
    words: str,
    args: tuple[str, ...],
) -> None:
    _plant(ws, run_git)
    (ws.root / SIDECAR).write_text(text, encoding="utf-8")
    run_git(ws.root, "commit", "-qam", "hand edit")
    code, out, err = run_cli(capsys, *args)
    assert code == 1 and out == ""
    assert err == f"error: {SIDECAR}: entry 'venmo-lookup' {words}\n"


def test_the_sidecar_and_the_per_task_record_share_one_check() -> None:
    with pytest.raises(MalformedUnit, match="more passes than episodes"):
        parse_counters(SIDECAR, "sk: {held_out: 1, held_out_pass: 2}\n")
    with pytest.raises(EvolveError, match="more passes than episodes"):
        parse_strata("sk:\n  t1: [0, 0, 1, 2]\n")
    for huge in (10**15 + 1, 10**400):
        with pytest.raises(MalformedUnit, match="too large to be episodes"):
            parse_counters(SIDECAR, f"sk: {{held_out: {huge}}}\n")
        with pytest.raises(EvolveError, match="too large to be episodes"):
            parse_strata(f"sk:\n  t1: [0, 0, {huge}, 0]\n")
    # counts that are episodes still read, in canonical and flow form
    fine = {"sk": {"held_out": 10**15, "held_out_pass": 3, "injected": 2, "injected_pass": 2}}
    assert parse_counters(SIDECAR, f"sk: {{held_out: {10**15}, held_out_pass: 3,"
                                   " injected: 2, injected_pass: 2}\n") == fine  # fmt: skip
    assert parse_counters(SIDECAR, "sk:\n  helpful: 9\n") == {"sk": {"helpful": 9}}
