"""Every verdict of a generation is the gate's: on the evidence, on a base that cannot be
judged, and as it is applied (an acceptance stands only if nothing moved since)."""

from __future__ import annotations

from evolve.gate import Gate, Verdict


def test_an_acceptance_falls_to_a_late_problem() -> None:
    gate = Gate()
    accepted = Verdict(True, "accepted: dev gain +0.100 [+0.050, +0.150]")
    assert gate.confirm(accepted, None) is accepted
    late = "HEAD moved before the verdict was applied (from abc to def)"
    assert gate.confirm(accepted, late) == Verdict(False, late)


def test_a_rejection_keeps_its_own_reason() -> None:
    rejected = Verdict(False, "workspace tests failed")
    assert Gate().confirm(rejected, "a late problem") is rejected


def test_a_base_that_cannot_be_judged_is_rejected_with_why() -> None:
    verdict = Gate().cannot_judge("evalset/splits.yaml is a symlink")
    assert verdict == Verdict(
        False, "the generation cannot be judged: evalset/splits.yaml is a symlink"
    )
