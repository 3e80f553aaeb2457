"""A hand-edited or corrupt per-task record (`memory/skills/_strata.yaml`, issue 13): one clear
error sentence or handled, never a traceback nor a silently wrong figure."""

from __future__ import annotations

import pytest
from test_skills_command import _plant

from conftest import GitRunner, cli_json, run_cli
from evolve.errors import EvolveError
from evolve.skills._failed import FAILED_PATH
from evolve.skills._strata import STRATA_PATH, parse_strata
from evolve.stats import stratified
from evolve.workspace import Workspace


def _strata(ws: Workspace, run_git: GitRunner, text: str) -> None:
    _plant(ws, run_git)
    (ws.root / STRATA_PATH).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    "text",
    [
        "venmo-lookup: {t1: [2, 0, 1, 1]\n",  # not YAML
        "venmo-lookup:\n  t1: [-2, 0, 1, 1]\n",  # negative
        "venmo-lookup:\n  t1: [2, 3, 1, 1]\n",  # more passes than episodes
        "venmo-lookup:\n  t1: [2.0, 0, 1, 1]\n",  # not a count
        "venmo-lookup:\n  t1: [true, 0, 1, 1]\n",
        "venmo-lookup:\n  2024-01-01: [2, 0, 1, 1]\n",  # a date, not a task id
        "- venmo-lookup\n",
        f"venmo-lookup:\n  t1: [{10**400}, 0, {10**400}, {10**400}]\n",  # huge
    ],
)
def test_a_corrupt_record_is_one_error_sentence(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    _strata(ws, run_git, text)
    for args in (("skills",), ("skills", "--json")):
        code, out, err = run_cli(capsys, *args)
        assert code == 1 and err.startswith(f"error: {STRATA_PATH}") and out == ""


def test_counts_too_large_to_compute_with_are_refused_not_a_traceback() -> None:
    huge = 10**400
    with pytest.raises(EvolveError, match="too large"):
        parse_strata(f"sk:\n  t1: [{huge}, 0, {huge}, {huge}]\n")
    # Counts that do fit are computed with (no overflow in the weights or the variance).
    big = 10**15
    st = stratified([(big, 0, big, big)], 0.9)
    assert st.lift == -1.0 and st.below_zero


def test_unknown_skill_ids_and_odd_task_ids_are_handled(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _strata(
        ws,
        run_git,
        "ghost: {t1: [9, 0, 9, 9]}\n"
        'venmo-lookup:\n  "t\\n1": [2, 0, 1, 1]\n  "é☃": [1, 0, 2, 2]\n  "null": [1, 0, 0, 0]\n',
    )
    data = cli_json(capsys, "skills")
    rows = {r["id"]: r for r in data["skills"]}
    assert "ghost" not in rows
    within = rows["venmo-lookup"]["stratified"]
    assert (within["tasks"], within["injected"], within["held_out"]) == (2, 3, 3)
    assert cli_json(capsys, "skills") == data  # stable


def test_a_record_that_is_not_utf8_is_one_error_sentence(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _plant(ws, run_git)
    (ws.root / STRATA_PATH).write_bytes(b"venmo-lookup:\n  caf\xe9: [2, 0, 1, 1]\n")
    code, out, err = run_cli(capsys, "skills")
    assert code == 1 and err.startswith(f"error: {STRATA_PATH}") and out == ""


def test_a_failed_task_record_that_is_not_utf8_is_one_error_sentence(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _plant(ws, run_git)
    (ws.root / FAILED_PATH).write_bytes(b"- caf\xe9-1\n")
    code, out, err = run_cli(capsys, "skills")
    assert code == 1 and err.startswith(f"error: {FAILED_PATH}") and out == ""
    assert "Traceback" not in err
