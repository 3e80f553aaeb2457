"""The sim's calibrated rates; see docs/sim.md."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SimRates:
    """Failure rates of the simulated model.

    `lapse` is the chance per slot of ignoring a directive that is in the prompt. The
    `*_stated` rates apply when the memory states a computed preference but the harness gives
    no value; the `*_given` rates when `<stats>` gives the value.
    """

    lapse: float = 0.03
    habitual_card_stated: float = 0.78
    habitual_card_given: float = 0.0
    running_total_stated: float = 0.44
    running_total_given: float = 0.0
    checksum_stated: float = 0.50
    checksum_given: float = 0.17
    # Updater roles: chance that a rewrite drops a line, that ACE modifies rather than adds,
    # that TEPA invents an off-vocabulary key.
    rewrite_drop: float = 0.15
    ace_modify: float = 0.5
    tepa_off_vocabulary: float = 0.2
    # Harness variants (docs/sim.md, "Harness variants"): the lapse under a checklist skill;
    # the share of computed-value errors a review before the call (Self-Refine) catches.
    checklist_lapse: float = 0.01
    review_catch: float = 0.5
    # The computed-value misses a checklist skill catches (the gross ones: a draw below
    # `checklist_catch` x the rate, which the review never catches), and the share an API
    # entry looked up on demand catches (the near ones, as the review: the same draws).
    checklist_catch: float = 0.5
    lookup_catch: float = 0.5
    # Instance tier: chance that an updater writes the vague statement ("Alex cares about how
    # emails are closed.") for a complaint line that shows no value (else it writes nothing).
    instance_vague: float = 0.5
