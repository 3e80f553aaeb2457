"""Line-level undo for document units (the `rewrite` recipe's one document).

A document is rewritten whole at every episode, so every later commit changes its text and a
file-level revert of an older rewrite would always conflict. What a rewrite *taught* is the
lines it added (and what it dropped, the lines it removed); undoing that on today's document
conflicts with nothing as long as the later rewrites kept the other fields alone. A rewrite
that changed the order of lines is undone by putting the lines it and its parent share back in
the parent's relative order (see `restore_order`).
"""

from __future__ import annotations

from evolve.history._content import unit_of, without_counters
from evolve.memory import MemoryUnit, dump_unit
from evolve.memory._similarity import normalize

DOCUMENT = "document"


def doc_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def added_lines(before: MemoryUnit | None, after: MemoryUnit) -> list[str]:
    """The lines of `after` that `before` did not have, in `after`'s order."""
    had = {normalize(line) for line in doc_lines(before.text)} if before is not None else set()
    return [line for line in doc_lines(after.text) if normalize(line) not in had]


def line_revert(
    path: str, before: bytes | None, after: bytes | None, now: bytes | None
) -> bytes | None:
    """Today's document with the lines the commit added taken out and the lines it removed
    put back (at the end), or None when a line-level undo does not apply."""
    b, a, n = unit_of(path, before), unit_of(path, after), unit_of(path, now)
    if a is None or n is None or a.kind != DOCUMENT or n.kind != DOCUMENT:
        return None
    if b is None and before is not None:
        return None  # not a unit before: nothing to compare lines with
    # Provenance (the complaint and task behind the latest rewrite) moves with every rewrite;
    # only a change of status, scope or kind makes a line-level undo wrong.
    blank = {"text": "", "complaint": None, "source_task": None}
    if without_counters(n).with_(**blank) != without_counters(a).with_(**blank):
        return None  # a later commit changed more than the text (status, scope...)
    added = {normalize(line) for line in added_lines(b, a)}
    removed = added_lines(a, b) if b is not None else []
    lines = [line for line in doc_lines(n.text) if normalize(line) not in added]
    present = {normalize(line) for line in lines}
    lines += [line for line in removed if normalize(line) not in present]
    if b is not None:
        lines = restore_order(lines, b, a)
    return dump_unit(n.with_(text="\n".join(lines))).encode("utf-8")


def restore_order(lines: list[str], before: MemoryUnit, after: MemoryUnit) -> list[str]:
    """`lines` with the lines `before` and `after` share put back in `before`'s relative
    order, if the commit (before -> after) changed that order; every other line (added by
    a later commit) keeps its place: the shared lines are sorted among the slots they hold."""
    rank = {normalize(line): i for i, line in enumerate(doc_lines(before.text))}
    kept = {normalize(line) for line in doc_lines(after.text)}
    shared_before = [normalize(x) for x in doc_lines(before.text) if normalize(x) in kept]
    shared_after = [normalize(x) for x in doc_lines(after.text) if normalize(x) in rank]
    if shared_before == shared_after:
        return lines  # the commit did not reorder anything
    slots = [
        i for i, line in enumerate(lines) if normalize(line) in rank and normalize(line) in kept
    ]
    moved = sorted((lines[i] for i in slots), key=lambda line: rank[normalize(line)])
    out = list(lines)
    for i, line in zip(slots, moved, strict=True):
        out[i] = line
    return out


def drop_kept_lines(stone: MemoryUnit, kept: set[str]) -> MemoryUnit | None:
    """A document tombstone without the lines the final document keeps (None if none left)."""
    lines = [line for line in doc_lines(stone.text) if normalize(line) not in kept]
    return stone.with_(text="\n".join(lines)) if lines else None


def is_document(unit: MemoryUnit | None) -> bool:
    return unit is not None and unit.kind == DOCUMENT
