"""Review of model-written variant files: a candidate waits until a person approves it.

:func:`propose_variant` commits `harness/<module>/<name>.py` through the applier (which
writes that one file or nothing). The file does not run in an episode until
:func:`approve_variant` records its content's SHA-256 in `harness/approved.yaml` (its own
commit): `evolve.harness` refuses to build a harness naming a variant file whose content is
not approved, so a changed file waits again. The health probe (sandboxed, scoring nothing)
may run a waiting candidate. :func:`pending_variants` lists what waits.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from evolve.applier._variants import plan_variant_file
from evolve.errors import ConfigError, EvolveError, ModelError
from evolve.harness import DEFAULTS, HARNESS_FILE, MODULES, VARIANTS_DIR, parse_choice
from evolve.harness._config import APPROVED_FILE, approved_variants, read_variant, variant_path
from evolve.harness._model_variant import CardLike, ModelMutator, ReplyRefused
from evolve.harness._probe import ProbeResult, probe_variant
from evolve.llm import LLM
from evolve.store import KIND
from evolve.txn import writer
from evolve.workspace import Workspace

_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True)
class VariantProposal:
    """A committed variant file (`commit` None: the file already held that text)."""

    module: str
    name: str
    path: str
    commit: str | None


def propose_variant(
    ws: Workspace, module: str, name: str, source: bytes, *, reason: str = ""
) -> VariantProposal:
    """Commit a model-written variant file; it waits for review before it first runs.

    Raises:
        EvolveError: the applier refused it (its one sentence); nothing is written.
    """
    changes, refused = plan_variant_file(ws, module, name, source)
    if refused:
        raise EvolveError(refused[0].reason)
    path = variant_path(module, name)
    with writer(ws, "harness variant") as tx:
        paths = tx.write(changes, allowed=(f"{VARIANTS_DIR}/",))
        sha = tx.commit(
            paths,
            f"harness: variant file {module}/{name} (awaits review)",
            body=reason.strip(),
            trailers=[(KIND, "harness")],
        )
    return VariantProposal(module, name, path, sha)


def pending_variants(ws: Workspace) -> list[tuple[str, str]]:
    """(module, name) of each variant file whose content is not approved."""
    approved = approved_variants(ws.root)
    out: list[tuple[str, str]] = []
    for module in MODULES:
        folder = ws.root / VARIANTS_DIR / module
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.glob("*.py")):
            try:
                digest = hashlib.sha256(read_variant(ws.root, module, path.stem)).hexdigest()
            except ConfigError:
                continue
            if approved.get(f"{module}/{path.stem}") != digest:
                out.append((module, path.stem))
    return out


def approve_variant(ws: Workspace, module: str, name: str) -> str | None:
    """A person approves the variant file as it stands: one commit of `harness/approved.yaml`.

    Raises:
        EvolveError: there is no such variant file (or it cannot be read).
    """
    if module not in MODULES:
        raise EvolveError(f"there is no harness module {module[:40]!r}.")
    if not _NAME.fullmatch(name):
        raise EvolveError("a variant's name is lower-case letters, digits and _ (64 at most).")
    digest = hashlib.sha256(read_variant(ws.root, module, name)).hexdigest()
    approved = approved_variants(ws.root)
    if approved.get(f"{module}/{name}") == digest:
        return None
    approved[f"{module}/{name}"] = digest
    text = "# Variant files a person reviewed: module/name -> SHA-256 of the approved text.\n"
    text += "".join(f"{key}: {approved[key]}\n" for key in sorted(approved))
    with writer(ws, "harness approve") as tx:
        paths = tx.write({APPROVED_FILE: text.encode()}, allowed=(f"{VARIANTS_DIR}/",))
        return tx.commit(
            paths, f"harness: approve variant file {module}/{name}", trailers=[(KIND, "harness")]
        )


@dataclass(frozen=True)
class ModelCycle:
    """One model-written candidate: the draft (None: the reply was refused), its probe (None:
    not probed), the commit that makes it wait for review (None: rejected), and why."""

    module: str
    name: str | None
    accepted: bool
    reason: str
    probe: ProbeResult | None = None
    proposal: VariantProposal | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "name": self.name,
            "accepted": self.accepted,
            "reason": self.reason,
            "probe": None if self.probe is None else self.probe.to_json(),
            "commit": None if self.proposal is None else self.proposal.commit,
        }


def model_variant_cycle(
    ws: Workspace, llm: LLM, card: CardLike, brief: str = "", *, max_tokens: int = 768
) -> ModelCycle:
    """The model writes the card's variant file; the sandboxed probe accepts or rejects it; an
    accepted one is committed to wait for review. Nothing the model wrote runs outside the
    sandbox, and a rejected candidate writes nothing."""
    module = str(card.module)
    champion = DEFAULTS.get(module, "?")
    with contextlib.suppress(ConfigError, OSError, ValueError):
        if (ws.root / HARNESS_FILE).is_file():
            champion = parse_choice((ws.root / HARNESS_FILE).read_text(), ws.root)[module][0]
    try:
        draft = ModelMutator(llm, max_tokens=max_tokens).write(card, champion, brief)
    except ReplyRefused as exc:
        return ModelCycle(module, None, False, f"the model's reply was refused: {exc}.")
    except ModelError as exc:
        return ModelCycle(module, None, False, f"the model could not reply: {exc}")
    probe = probe_variant(draft.module, draft.name, draft.source)
    if not probe.ok:
        return ModelCycle(
            module, draft.name, False, f"the probe rejected it: {probe.reason}", probe
        )
    try:
        proposal = propose_variant(ws, draft.module, draft.name, draft.source)
    except EvolveError as exc:
        return ModelCycle(module, draft.name, False, f"the applier refused it: {exc}", probe)
    return ModelCycle(module, draft.name, True, "it awaits review", probe, proposal)
