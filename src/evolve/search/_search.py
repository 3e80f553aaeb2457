"""The module-level harness search (ScholarEvolve's, made reviewable and gated).

A cycle starts from the champion (the harness `prompts/harness.yaml` names at HEAD). Each
generation: for each module (the capability brief's order), the mutation role turns research
cards into single-module candidates, each passes the health probe, is committed on
`refs/evolve/candidates/<cycle>/<name>` and scored on dev against the champion, paired over
tasks x runs. Crossover ranks combinations of the modules' winners by their additive predicted
gain, scores the shortlist that fits the budget, and keeps a module at the champion's where its
gain does not carry over. The best candidate replaces the champion only when its paired
bootstrap lower bound beats `gate.min_gain` (one commit, through the applier, that `evolve
revert` takes back); holdout is scored and reported, never deciding. The cycle stops after
`patience` generations without a confirmed gain, when the budget is spent, or when no card is
left. Nothing moves the branch but that one commit per confirmed gain.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from evolve.applier._harness import current_choice
from evolve.errors import ConfigError, EvolveError
from evolve.harness import DEFAULTS, HARNESS_FILE, MODULES, dump_choice, parse_choice
from evolve.harness._config import Choice, variant_path
from evolve.search._mutate import (
    Blueprint,
    BuiltinMutator,
    Candidate,
    CardLike,
    Mutator,
    Play,
    candidate_name,
    probe,
    with_blueprints,
)
from evolve.search._score import Scorer
from evolve.stats import PairedGain
from evolve.store import KIND
from evolve.txn import writer
from evolve.workspace import Workspace

CANDIDATES_PREFIX = "refs/evolve/candidates"
SEARCH_REF = "refs/evolve/search"
SEARCH_TRAILER = "Evolve-Search"
Strategy = Literal["topics", "relevance"]
Mode = Literal["modules", "whole"]
# A picker: the cards to try for a module (n of them, none of `exclude`).
Pick = Callable[[str, int, Strategy, Sequence[str]], list[CardLike]]


@dataclass
class Tried:
    """One scored (or refused) candidate."""

    name: str
    kind: str  # "single", "combination" or "whole"
    modules: list[str]
    variants: dict[str, str]
    cards: list[str]
    ref: str | None
    gain: list[float] | None = None  # mean, low, high (dev success, paired)
    predicted: float | None = None  # combinations: the sum of their parts' gains
    tokens_per_episode: float | None = None
    verdict: str = ""  # helps | flat | hurts | refused: <why>
    generation: int = 0


@dataclass
class SearchResult:
    cycle: str
    champion_before: dict[str, str]
    champion_after: dict[str, str]
    generations: int = 0
    tried: list[Tried] = field(default_factory=list)
    path: list[dict[str, Any]] = field(default_factory=list)  # each champion move
    episodes: int = 0
    budget: int = 0
    wall_s: float = 0.0
    stopped: str = ""
    dry_run: bool = False

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _names(choice: Choice) -> dict[str, str]:
    out = {}
    for m in MODULES:
        name, params = choice.get(m, (DEFAULTS[m], {}))
        out[m] = name + "".join(f" {k}={v}" for k, v in sorted(params.items()))
    return out


def _gain(g: PairedGain) -> list[float]:
    return [round(g.mean, 4), round(g.low, 4), round(g.high, 4)]


def _verdict(g: PairedGain) -> str:
    if g.high < 0:
        return "hurts"
    if g.low > 0:
        return "helps"
    return "flat" if g.mean <= 0 else "promising"


def file_card(module: str, name: str) -> str:
    """The card id a model-written variant file is tried under (`file:<module>/<name>`)."""
    return f"file:{module}/{name}"


def next_cycle(ws: Workspace) -> str:
    """The next free cycle name: c1, c2, ..."""
    used = {
        r.removeprefix(CANDIDATES_PREFIX + "/").split("/", 1)[0]
        for r in ws.store.ref_names(CANDIDATES_PREFIX)
    }
    n = 1
    while f"c{n}" in used:
        n += 1
    return f"c{n}"


def tried_cards(ws: Workspace) -> set[str]:
    """The card ids earlier recorded cycles tried (a new cycle tries only new cards)."""
    import json

    out: set[str] = set()
    for data in ws.store.read_side_ref(SEARCH_REF).values():
        try:
            record = json.loads(data)
            for t in record.get("tried", []):
                out.update(str(c) for c in t.get("cards", []))
        except (ValueError, AttributeError, TypeError):
            continue
    return out


def load_searches(ws: Workspace) -> list[dict[str, Any]]:
    """Every recorded search cycle, oldest first (the report reads these)."""
    import json

    out = []
    for _path, data in sorted(ws.store.read_side_ref(SEARCH_REF).items()):
        try:
            record = json.loads(data)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return sorted(out, key=lambda r: str(r.get("started", "")))


class Search:
    """One search cycle over a workspace (see the module's docstring)."""

    def __init__(
        self,
        ws: Workspace,
        pick: Pick,
        *,
        cycle: str,
        budget: int,
        patience: int = 1,
        per_module: int = 4,
        shortlist: int = 4,
        strategy: Strategy = "topics",
        mode: Mode = "modules",
        runs: int = 3,
        seed: int = 0,
        mutator: Mutator | None = None,
        play: Play | None = None,
        brief: str = "",
        module_order: Sequence[str] = MODULES,
        scorer: Scorer | None = None,
        commit: bool = True,
        progress: Callable[[str], None] | None = None,
        files: Sequence[tuple[str, str]] = (),
    ) -> None:
        if cycle == "gen" or not cycle.replace("-", "").replace("_", "").isalnum():
            raise EvolveError(
                f"the cycle name {cycle[:40]!r} must be letters, digits, - and _ (not gen)."
            )
        self.ws, self.pick, self.cycle = ws, pick, cycle
        self.budget, self.patience = budget, patience
        self.per_module, self.shortlist = per_module, shortlist
        self.strategy, self.mode = strategy, mode
        self.mutator = mutator or BuiltinMutator()
        self.play, self.brief = play, brief
        self.order = [m for m in module_order if m in MODULES] + [
            m for m in MODULES if m not in module_order
        ]
        self.scorer = scorer or Scorer(ws, runs, seed)
        self.commit = commit
        self.say = progress or (lambda _: None)
        self.min_gain = ws.config.gate.min_gain
        # Approved model-written variant files (module, name) no earlier cycle tried: each is
        # a single-module candidate, tried as a card is (its id `file:<module>/<name>`).
        self.files = [f for f in files if f[0] in MODULES]

    # --- candidates as commits ---------------------------------------------------------

    def _ref(self, name: str) -> str:
        return f"{CANDIDATES_PREFIX}/{self.cycle}/{name}"

    def _candidate_commit(self, base: str, cand: Candidate) -> str:
        """The candidate as a commit whose parent is the champion's: only the harness file
        changes (canonical form), on its own ref; HEAD, the index and the tree untouched."""
        ref = self._ref(cand.name)
        store = self.ws.store
        store.set_ref(ref, base)
        why = "\n".join(f"- {b.module}: {b.variant} ({b.why})" for b in cand.blueprints)
        return store.write_side_ref(
            ref,
            {HARNESS_FILE: dump_choice(cand.choice).encode("utf-8")},
            f"search {self.cycle}: candidate {cand.name}",
            body=why,
            trailers=[(KIND, "harness"), (SEARCH_TRAILER, f"{self.cycle}/{cand.name}")],
        )

    def _spend(self) -> bool:
        """Whether one more dev scoring fits the budget."""
        return self.scorer.episodes + self.scorer.episodes_per_score() <= self.budget

    def _score(
        self, base: str, cand: Candidate, kind: str, generation: int, result: SearchResult
    ) -> Tried | None:
        if cand.name in self.made:  # the same change on a later champion: its own ref
            cand = replace(cand, name=f"{cand.name}-g{generation}")
        variants = {b.module: b.variant for b in cand.blueprints}
        tried = Tried(
            cand.name, kind, list(cand.modules), variants, list(cand.cards), None,
            generation=generation,
        )  # fmt: skip
        problem = probe(cand, self.play, self.ws.root)
        if problem is not None:
            tried.verdict = f"refused: {problem}"
            result.tried.append(tried)
            self.say(f"{cand.name}: refused by the probe ({problem})")
            return None
        if not self._spend():
            self.spent = True
            return None
        commit = self._candidate_commit(base, cand)
        tried.ref = self._ref(cand.name)
        g = self.scorer.gain(base, commit)
        tried.gain = _gain(g)
        tried.verdict = _verdict(g)
        tried.tokens_per_episode = round(self.scorer(commit).tokens_per_episode, 1)
        result.tried.append(tried)
        self.say(
            f"{kind} {cand.name}: gain {g.mean:+.3f} [{g.low:+.3f}, {g.high:+.3f}] "
            f"{tried.verdict} ({self.scorer.episodes}/{self.budget} episodes)"
        )
        self.commits[cand.name] = commit
        self.made[cand.name] = cand
        return tried

    # --- one cycle ------------------------------------------------------------------

    def run(self) -> SearchResult:
        started = time.perf_counter()
        store = self.ws.store
        head = store.head()
        if head is None:
            raise EvolveError("the workspace has no commit yet; run `evolve init` first.")
        committed = store.read(head, HARNESS_FILE)
        champion = (
            parse_choice(committed.decode("utf-8")) if committed is not None
            else current_choice(self.ws)
        )  # fmt: skip
        result = SearchResult(self.cycle, _names(champion), _names(champion), budget=self.budget)
        result.dry_run = not self.commit
        excluded: set[str] = set()
        stale = 0
        base = head
        self.commits: dict[str, str] = {}
        self.made: dict[str, Candidate] = {}
        self.spent = False  # a candidate was left unscored for want of budget
        generation = 0
        while True:
            generation += 1
            if not self._spend():
                result.stopped = "the budget is spent"
                break
            self.say(f"generation {generation}: scoring the champion")
            self.scorer(base)
            singles = self._singles(base, champion, excluded, generation, result)
            if singles is None:
                result.stopped = result.stopped or "no research card is left to try"
                generation -= 1
                break
            pool = list(singles)
            if self.mode == "modules":
                pool += self._crossover(base, champion, singles, generation, result)
            best = self._best(pool)
            while best is not None and best.gain is not None and best.gain[1] > self.min_gain:
                refusal = self._gate_refusal(base, best)
                if refusal is None:
                    break
                best.verdict = f"refused: {refusal}"
                self.say(f"{best.name}: refused by the gate ({refusal})")
                pool = [t for t in pool if t is not best]
                best = self._best(pool)
            result.generations = generation
            if best is not None and best.gain is not None and best.gain[1] > self.min_gain:
                cand_choice = self._choice_of(champion, best)
                holdout = self._holdout(base, best)
                move = {
                    "generation": generation,
                    "candidate": best.name,
                    "gain": best.gain,
                    "holdout_gain": holdout,
                    "harness": _names(cand_choice),
                    "commit": None,
                }
                if self.commit:
                    moved = self._move_champion(cand_choice, best, base)
                    move["commit"] = moved
                    base = moved or base
                else:
                    base = self.commits[best.name]
                champion = cand_choice
                result.path.append(move)
                result.champion_after = _names(champion)
                self.say(
                    f"champion -> {best.name}: dev gain {best.gain[0]:+.3f} "
                    f"[{best.gain[1]:+.3f}, {best.gain[2]:+.3f}]"
                )
                stale = 0
            elif self.spent:
                result.stopped = "the budget is spent"
                break
            else:
                stale += 1
                self.say(f"generation {generation}: no confirmed gain ({stale}/{self.patience})")
                if stale >= self.patience:
                    result.stopped = f"{self.patience} generation(s) without a confirmed gain"
                    break
        result.episodes = self.scorer.episodes
        result.wall_s = round(time.perf_counter() - started, 2)
        if self.commit:
            self._record(result)
        return result

    def _singles(
        self,
        base: str,
        champion: Choice,
        excluded: set[str],
        generation: int,
        result: SearchResult,
    ) -> list[Tried] | None:
        """This generation's candidates from new cards (None: no card left)."""
        per: dict[str, list[CardLike]] = {}
        for module in self.order:
            cards = self.pick(module, self.per_module, self.strategy, sorted(excluded))
            cards = [c for c in cards if c.id not in excluded]
            if cards:
                per[module] = cards
                excluded.update(c.id for c in cards)
        files = [f for f in self.files if file_card(*f) not in excluded]
        excluded.update(file_card(*f) for f in files)
        if not per and not files:
            return None
        scored: list[Tried] = []
        if self.mode == "whole":
            # Whole-harness mutation: each candidate changes every module at once.
            for i in range(max(len(c) for c in per.values())):
                blueprints: list[Blueprint] = []
                ids: list[str] = []
                for cards in per.values():
                    if i < len(cards):
                        made = self._mutate(cards[i], champion, result, generation)
                        if made is not None:
                            blueprints += made.blueprints
                            ids += made.cards
                if not blueprints:
                    continue
                cand = Candidate(
                    candidate_name(blueprints),
                    tuple(blueprints),
                    with_blueprints(champion, blueprints),
                    tuple(ids),
                )
                done = self._score(base, cand, "whole", generation, result)
                if done is not None:
                    scored.append(done)
            return scored
        for module, cards in per.items():
            for card in cards:
                one = self._mutate(card, champion, result, generation)
                if one is None or champion.get(module) == one.choice.get(module):
                    continue
                done = self._score(base, one, "single", generation, result)
                if done is not None:
                    scored.append(done)
        for module, name in files:
            if champion.get(module, ("",))[0] == name:
                continue
            bp = Blueprint(module, name, {}, f"model-written {variant_path(module, name)}")
            try:
                choice = with_blueprints(champion, [bp], self.ws.root)
            except ConfigError as exc:  # gone, or changed since it was approved
                result.tried.append(
                    Tried(candidate_name([bp]), "single", [module], {module: name},
                          [file_card(module, name)], None, verdict=f"refused: {exc}",
                          generation=generation)
                )  # fmt: skip
                continue
            cand = Candidate(candidate_name([bp]), (bp,), choice, (file_card(module, name),))
            done = self._score(base, cand, "single", generation, result)
            if done is not None:
                scored.append(done)
        return scored

    def _mutate(
        self, card: CardLike, champion: Choice, result: SearchResult, generation: int
    ) -> Candidate | None:
        try:
            return self.mutator(card, champion, self.brief)
        except EvolveError as exc:
            result.tried.append(
                Tried(card.id, "single", [card.module], {}, [card.id], None,
                      verdict=f"refused: {exc}", generation=generation)
            )  # fmt: skip
            return None

    def _crossover(
        self,
        base: str,
        champion: Choice,
        singles: Sequence[Tried],
        generation: int,
        result: SearchResult,
    ) -> list[Tried]:
        """Combinations of the modules' winners (a positive mean gain, not harmful), ranked
        by their additive predicted gain; the shortlist that fits the budget is scored; the
        best then drops each module whose gain does not carry over."""
        best_of: dict[str, Tried] = {}
        for t in singles:
            if t.gain is None or t.gain[0] <= 0 or t.verdict == "hurts":
                continue
            m = t.modules[0]
            if m not in best_of or t.gain[0] > (best_of[m].gain or [0])[0]:
                best_of[m] = t
        winners = list(best_of.values())
        combos = []
        for k in range(len(winners), 1, -1):
            for group in itertools.combinations(winners, k):
                predicted = round(sum((t.gain or [0])[0] for t in group), 4)
                combos.append((predicted, group))
        combos.sort(key=lambda c: (-c[0], len(c[1])))
        scored: list[Tried] = []
        for predicted, group in combos[: self.shortlist]:
            done = self._combine(base, champion, group, predicted, generation, result)
            if done is not None:
                scored.append(done)
        if not scored:
            return scored
        top = max(scored, key=lambda t: (t.gain or [0])[0])
        # Keep the base module where a gain does not carry over: a part whose removal does
        # not lower the measured gain is dropped (fewer changes, fewer tokens).
        while len(top.modules) > 1:
            parts = [best_of[m] for m in top.modules]
            dropped = None
            for part in sorted(parts, key=lambda t: (t.gain or [0])[0]):
                rest = tuple(p for p in parts if p is not part)
                predicted = round(sum((p.gain or [0])[0] for p in rest), 4)
                name = self._combo_name(champion, rest)
                have = next((t for t in scored + list(singles) if t.name == name), None)
                if have is None:
                    have = self._combine(base, champion, rest, predicted, generation, result)
                    if have is not None:
                        scored.append(have)
                if have is not None and (have.gain or [0])[0] >= (top.gain or [0])[0]:
                    dropped = have
                    break
            if dropped is None:
                break
            top = dropped
        return scored

    def _combo_name(self, champion: Choice, group: Sequence[Tried]) -> str:
        return candidate_name([b for t in group for b in self.made[t.name].blueprints])

    def _combine(
        self,
        base: str,
        champion: Choice,
        group: Sequence[Tried],
        predicted: float,
        generation: int,
        result: SearchResult,
    ) -> Tried | None:
        choice: Choice = champion
        blueprints: list[Blueprint] = []
        for t in group:
            made = self.made[t.name]
            blueprints += made.blueprints
            for m in made.modules:
                choice = {**choice, m: made.choice[m]}
        cand = Candidate(
            candidate_name(blueprints),
            tuple(blueprints),
            choice,
            tuple(c for t in group for c in t.cards),
        )
        done = self._score(base, cand, "combination", generation, result)
        if done is not None:
            done.predicted = predicted
        return done

    def _best(self, pool: Sequence[Tried]) -> Tried | None:
        """The candidate with the highest dev gain (fewer tokens on a tie)."""
        scored = [t for t in pool if t.gain is not None]
        if not scored:
            return None
        return max(scored, key=lambda t: ((t.gain or [0])[0], -(t.tokens_per_episode or 0.0)))

    def _gate_refusal(self, base: str, t: Tried) -> str | None:
        """Why the gate refuses the candidate as the champion (None: it accepts): its own
        decision on the candidate's evidence, so the caps hold here as in `evolve evolve`
        (prompt size, tokens per episode against the champion, cost per episode). The
        workspace's tests are not run: a candidate changes only the harness file."""
        from evolve.gate import Gate, GateEvidence, prompt_sizes

        gate = self.ws.config.gate
        commit = self.commits[t.name]
        here, there = self.scorer(base), self.scorer(commit)
        evidence = GateEvidence(
            base_protected_hash="",
            candidate_protected_hash="",
            protected_dirty=(),
            tests_passed=True,
            tests_output="",
            dev_gain=self.scorer.gain(base, commit),
            min_gain=gate.min_gain,
            prompt_chars=sum(prompt_sizes(self.ws.store, commit).values()),
            max_prompt_chars=gate.max_prompt_chars,
            base_tokens=here.tokens_per_episode,
            candidate_tokens=there.tokens_per_episode,
            max_token_factor=gate.max_token_factor,
            base_cost=here.cost / len(here.episodes) if here.episodes else 0.0,
            candidate_cost=there.cost / len(there.episodes) if there.episodes else 0.0,
            max_cost=gate.max_cost,
            changed=commit != base,
        )
        verdict = Gate().decide(evidence)
        return None if verdict.accepted else verdict.reason

    def _choice_of(self, champion: Choice, t: Tried) -> Choice:
        commit = self.commits[t.name]
        data = self.ws.store.read(commit, HARNESS_FILE)
        return parse_choice((data or b"").decode("utf-8"), self.ws.root)

    def _holdout(self, base: str, t: Tried) -> list[float] | None:
        """Holdout gain: reported beside dev, never deciding (None when it does not fit)."""
        commit = self.commits[t.name]
        per = self.scorer.episodes_per_score("holdout")
        if self.scorer.episodes + 2 * per > self.budget:
            return None
        return _gain(self.scorer.gain(base, commit, "holdout"))

    def _move_champion(self, choice: Choice, t: Tried, base: str) -> str | None:
        """One commit of the harness file through the applier, with trailers, on `base`
        (the branch as the search found it: refused if anything else moved it)."""
        from evolve.applier._harness import plan_harness

        changes: dict[str, Any] = {}
        for m in MODULES:
            name, params = choice[m]
            changes[m] = {"variant": name, **params} if params else name
        text, refused = plan_harness(self.ws, changes)
        if refused:
            raise EvolveError(refused[0].reason)
        if text is None:
            return None
        gain = t.gain or [0.0, 0.0, 0.0]
        body = (
            f"dev gain {gain[0]:+.3f} [{gain[1]:+.3f}, {gain[2]:+.3f}] over the champion "
            f"(paired, tasks x runs); candidate {self._ref(t.name)}"
        )
        with writer(self.ws, "search") as tx:
            if tx.store.head() != base:
                raise EvolveError(
                    "the branch moved while the search ran; the champion was not changed "
                    f"(its candidate is {self._ref(t.name)})."
                )
            paths = tx.write({HARNESS_FILE: text}, allowed=("prompts/",))
            return tx.commit(
                paths,
                f"harness: search {self.cycle} champion {t.name}",
                body=body,
                trailers=[(KIND, "harness"), (SEARCH_TRAILER, f"{self.cycle}/{t.name}")],
            )

    def _record(self, result: SearchResult) -> None:
        import json

        data = result.as_json()
        data["started"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.ws.store.write_side_ref(
            SEARCH_REF,
            {f"{self.cycle}.json": json.dumps(data, indent=1, sort_keys=True).encode("utf-8")},
            f"search {self.cycle}: {len(result.path)} champion move(s)",
        )
