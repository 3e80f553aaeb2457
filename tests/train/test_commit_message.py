"""Episode commit messages a reviewer reads in one pass (issue 8 item 10)."""

from __future__ import annotations

import re
from collections.abc import Callable

from evolve.applier import ApplyResult
from evolve.history import clip
from evolve.ops import Op, Refusal
from evolve.train import commit_message, train
from evolve.updaters import Update
from evolve.workspace import Workspace
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"
WORDS = (
    "Payments to friends should be visible to friends only, never public, and the note should "
    "say what the money was for, in plain words, with the amount written out in full dollars "
    "and cents so that the recipient can match the payment to the shared expense afterwards."
)


def test_an_ace_modify_written_as_revoke_and_add_reads_as_one_modify() -> None:
    old = memory_unit("ace-0000000001", "Payments must be private.", status="revoked")
    old = old.with_(revoked_by="ace-0000000002")
    new = memory_unit("ace-0000000002", "Payments must be friends only.", supersedes=old.id)
    result = ApplyResult(applied=[Op(op="revoke", unit=old), Op(op="add", unit=new)])
    subject, _ = commit_message(
        "ace", 13, "pay_back-1", "Wrong visibility.", Update(), result, persona="alex"
    )
    assert subject == "ace · alex · episode 13 (pay_back-1): modify 1"


def test_the_subject_shows_only_non_zero_counts_in_a_fixed_order() -> None:
    a = memory_unit("ace-000000000a", "Sign texts with -A.")
    b = memory_unit("ace-000000000b", "Use the Visa card.")
    gone = memory_unit("ace-000000000c", "Old bullet.", status="revoked")  # revoked, not replaced
    result = ApplyResult(
        applied=[Op(op="add", unit=a), Op(op="add", unit=b), Op(op="revoke", unit=gone)]
    )
    subject, _ = commit_message("ace", 2, "text_friend-3", "x", Update(), result, persona="alex")
    assert subject == "ace · alex · episode 2 (text_friend-3): add 2, revoke 1"
    assert " 0" not in subject


def test_commit_bodies_cut_long_texts_at_word_boundaries() -> None:
    unit = memory_unit(
        "rewrite-0000000001", WORDS + "\n\n" + WORDS, recipe="rewrite", kind="document"
    )
    result = ApplyResult(applied=[Op(op="rewrite", unit=unit)])
    refused = Refusal(op="add", what=WORDS, reason="tombstoned")
    _, body = commit_message(
        "rewrite", 4, "pay_back-1", "c", Update(refused=[refused]), result, persona="alex"
    )
    line = next(ln for ln in body.splitlines() if ln.startswith("- rewrite "))
    shown = line.split(": ", 1)[1]
    assert shown.endswith(" …") and len(shown) <= 160
    kept = shown.removesuffix(" …")
    assert WORDS.startswith(kept)
    assert WORDS[len(kept)] == " "  # the cut falls between two words


def test_clip_never_cuts_a_word() -> None:
    for limit in range(12, len(WORDS), 7):
        cut = clip(WORDS, limit)
        assert len(cut) <= limit
        kept = cut.removesuffix(" …")
        assert WORDS.startswith(kept) and WORDS[len(kept)] in " ,."
    assert clip("short text", 40) == "short text"
    assert clip("one\n  two", 40) == "one two"


def test_training_commits_name_the_persona_and_print_no_zero_counts(
    workspace: Workspace, run_git: RunGit
) -> None:
    report = train(workspace, recipe="ace", episodes=16)
    assert report.commits
    for sha in report.commits:
        subject = run_git(workspace.root, "log", "-1", "--format=%s", sha).strip()
        assert subject.startswith("ace · alex · episode "), subject
        counts = subject.split("): ", 1)[1]
        assert re.fullmatch(r"[a-z]+ [1-9]\d*(, [a-z]+ [1-9]\d*)*", counts), subject
