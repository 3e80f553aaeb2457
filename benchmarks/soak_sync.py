"""The sync soak: three learners share one bare remote and train at the same time.

One bare remote; three `evolve clone`s of it, each training alex (persona_world, the sim
models, ace; one training seed each, so three streams on one persona clock and one memory
scope) in its own process at the same time. Each learner, at seeded random points: trains a
few episodes (`evolve train`), or a few through `evolve train --sync K`, pulls, pushes, writes
a hand note (a file without front matter, committed as a person commits it), reverts a unit
(`evolve revert ID`: a tombstone), and reviews (`evolve review`) when anything is pending.

Afterwards each clone pulls and pushes in turn, then pulls again, and the checks run:

- identical memory and records on every clone and the remote (one branch tip, one records tip);
- no unit lost: every unit that leaves the active set in a commit is named by that commit's
  `Evolve-Ops` (a merge: or the other side had already let it go);
- counters: every `_counters.yaml` equals the sum of every non-merge commit's delta;
- every tombstone honoured: a tombstoned unit stays tombstoned and no active unit says its text;
- `git fsck --strict` clean on every clone and the remote;
- `evolve log` in a fresh `evolve clone` lists every entry each learner's own log listed.

    python benchmarks/bench_sync.py --soak [--episodes 50 --learners 3 --seed 0]
    python benchmarks/soak_sync.py learner DIR NAME SEED EPISODES RNG   (one learner; internal)
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PERSONA = "alex"
FRONT = re.compile(r"\A---\n(.*?)\n---\n(.*)\Z", re.S)


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: {done.stderr.strip()}")
    return done.stdout


def _evolve(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evolve", "-C", str(root), *args], capture_output=True, text=True
    )


# ---------------------------------------------------------------- one learner (a process)


def _units(root: Path) -> dict[str, tuple[str, str]]:
    """id -> (status, text) of the unit files in the working tree's memory/alex/."""
    out = {}
    for path in sorted((root / "memory" / PERSONA).glob("*.md")):
        parsed = _parse_unit(path.read_text(encoding="utf-8"))
        if parsed is not None:
            out[parsed[0]] = parsed[1:]
    return out


def _parse_unit(text: str) -> tuple[str, str, str] | None:
    match = FRONT.match(text)
    if match is None:
        return None
    head = yaml.safe_load(match.group(1))
    if not isinstance(head, dict) or "id" not in head:
        return None
    return str(head["id"]), str(head.get("status", "active")), match.group(2).strip()


def learner(root: Path, name: str, seed: int, episodes: int, rng_seed: int) -> dict[str, Any]:
    """Train stream `seed` of alex in `root` to `episodes`, syncing at random points."""
    rng = random.Random(rng_seed)
    done: dict[str, Any] = {
        "name": name, "actions": {}, "refused": [], "failed": [], "tombstones": [],
        "notes": 0, "pushes": 0, "pulls": 0, "retries": 0,
    }  # fmt: skip
    upto = 0
    notes = 0

    def run(kind: str, *args: str) -> subprocess.CompletedProcess[str]:
        done["actions"][kind] = done["actions"].get(kind, 0) + 1
        result = _evolve(root, *args)
        if result.returncode != 0:
            said = result.stderr.strip()
            # a clean refusal is one sentence and exit 1; anything else is a failure
            bad = result.returncode != 1 or "Traceback" in said or kind in {"train", "sync"}
            (done["failed"] if bad else done["refused"]).append(f"{kind}: {said[-2000:]}")
        return result

    def travelled(result: subprocess.CompletedProcess[str]) -> None:
        if result.returncode == 0:
            shown = json.loads(result.stdout)
            for item in shown.get("pushes", [shown] if "pushed" in shown else []):
                done["retries"] += item.get("pulls", 0)

    while upto < episodes:
        roll = rng.random()
        if roll < 0.35:
            upto = min(episodes, upto + rng.randint(1, 5))
            review = ["--review"] if rng.random() < 0.3 else []
            run("train", "train", "--seed", str(seed), "--episodes", str(upto), *review, "--json")
        elif roll < 0.55:
            upto = min(episodes, upto + rng.randint(2, 8))
            every = str(rng.randint(1, 3))
            result = run("sync", "train", "--seed", str(seed), "--episodes", str(upto),
                         "--sync", every, "--json")  # fmt: skip
            travelled(result)
        elif roll < 0.67:
            travelled(run("pull", "pull", "--json"))
        elif roll < 0.79:
            travelled(run("push", "push", "--json"))
        elif roll < 0.88:
            notes += 1
            rel = f"memory/{PERSONA}/note-{name}-{notes}.md"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(
                f"{name}'s note {notes}: confirm the amount before paying.\n", encoding="utf-8"
            )
            done["actions"]["note"] = done["actions"].get("note", 0) + 1
            _git(root, "add", "--", rel)
            _git(root, "commit", "--quiet", "-m", f"hand note {notes} by {name}", "--", rel)
            done["notes"] += 1
        elif roll < 0.96:
            active = sorted(uid for uid, (status, _t) in _units(root).items() if status == "active")
            if active:
                uid = rng.choice(active)
                added = _git(root, "log", "--format=%H", "--diff-filter=A", "--",
                             f"memory/{PERSONA}/{uid}.md").split()  # fmt: skip
                # the commit that taught it: a tombstone (its newest change may be a reaffirm)
                rev = [added[-1], "--unit", uid] if added else [uid]
                result = run("revert", "revert", *rev, "--reason", f"{name} disagrees", "--json")
                if result.returncode == 0:
                    shown = json.loads(result.stdout)
                    done["tombstones"] += [t["id"] for t in shown.get("tombstones", [])]
        else:
            pending = [u for u, (status, _t) in _units(root).items() if status == "pending"]
            if pending:
                verdict, uid = rng.choice(["approve", "reject"]), rng.choice(sorted(pending))
                if run("review", "review", verdict, uid).returncode == 0 and verdict == "reject":
                    done["tombstones"].append(uid)
    travelled(run("push", "push", "--json"))
    log = _evolve(root, "log", "-n", "0", "--json")
    done["log"] = sorted(_log_keys(json.loads(log.stdout))) if log.returncode == 0 else []
    if log.returncode != 0:
        done["failed"].append(f"log: {log.stderr.strip()}")
    return done


def _log_keys(entries: list[dict[str, Any]]) -> Iterator[str]:
    for entry in entries:
        yield f"{entry.get('kind')} {entry['commit']}"


# ---------------------------------------------------------------- the checks


class _Objects:
    """Blobs and trees of one repository, read through one `git cat-file --batch`."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "cat-file", "--batch"], cwd=root, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )  # fmt: skip
        self.cache: dict[str, bytes | None] = {}

    def read(self, spec: str) -> bytes | None:
        if spec in self.cache:
            return self.cache[spec]
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(spec.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        data = None
        if len(header) == 3:
            data = self.proc.stdout.read(int(header[2]))
            self.proc.stdout.read(1)
        self.cache[spec] = data
        return data

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def _tree_files(root: Path, commit: str, folder: str) -> dict[str, str]:
    out = _git(root, "ls-tree", "-r", commit, "--", folder)
    files = {}
    for line in out.splitlines():
        meta, _, path = line.partition("\t")
        files[path] = meta.split()[2]
    return files


def _states(root: Path, objects: _Objects, commit: str) -> dict[str, tuple[str, str]]:
    """id -> (status, text) of every unit under memory/ at `commit`."""
    out = {}
    for path, blob in _tree_files(root, commit, "memory").items():
        if not path.endswith(".md"):
            continue
        data = objects.read(blob)
        parsed = _parse_unit(data.decode("utf-8")) if data is not None else None
        if parsed is not None:
            out[parsed[0]] = parsed[1:]
    return out


def _counters(objects: _Objects, commit: str) -> dict[tuple[str, str, str], float]:
    data = objects.read(f"{commit}:memory/{PERSONA}/_counters.yaml")
    loaded = yaml.safe_load(data) if data else None
    out: dict[tuple[str, str, str], float] = {}
    for uid, counts in (loaded or {}).items():
        for key, value in (counts or {}).items():
            out[(PERSONA, str(uid), str(key))] = float(value)
    return out


def _minus(
    a: Mapping[tuple[str, str, str], float], b: Mapping[tuple[str, str, str], float]
) -> dict[tuple[str, str, str], float]:
    return {k: a.get(k, 0.0) - b.get(k, 0.0) for k in set(a) | set(b)}


def check_history(root: Path) -> tuple[list[str], dict[str, int]]:
    """No unit lost and counters that add up, over every commit of HEAD's history."""
    problems: list[str] = []
    objects = _Objects(root)
    log = _git(
        root, "log", "--format=%H %P%x00%(trailers:key=Evolve-Ops,valueonly,separator=%x20)%x01"
    )
    commits: list[tuple[str, list[str], str]] = []
    for record in log.split("\x01"):
        if not record.strip():
            continue
        head, _, ops = record.strip("\n").partition("\x00")
        sha, *parents = head.split()
        commits.append((sha, parents, ops))
    states = {sha: _states(root, objects, sha) for sha, _p, _o in commits}

    def active(sha: str) -> set[str]:
        return {u for u, (status, _t) in states[sha].items() if status == "active"}

    merges = left = 0
    total: dict[tuple[str, str, str], float] = {}
    for sha, parents, ops in commits:
        named = set(re.findall(r"[a-z]+-[0-9a-f]{10}", ops))
        if len(parents) == 2:
            merges += 1
            base = _git(root, "merge-base", *parents).strip()
            if base not in states:
                states[base] = _states(root, objects, base)
            for i, parent in enumerate(parents):
                other = parents[1 - i]
                for uid in sorted(active(parent) - active(sha) - named):
                    other_state = states[other].get(uid)
                    let_go = (other_state is not None and other_state[0] != "active") or (
                        other_state is None and uid in states[base]
                    )
                    if not let_go:
                        problems.append(f"merge {sha[:10]} lost {uid} of {parent[:10]} unnamed")
                left += len(active(parent) - active(sha))
            continue
        before = active(parents[0]) if parents else set()
        for uid in sorted(before - active(sha) - named):
            problems.append(f"{sha[:10]} let {uid} leave the active set without naming it")
        left += len(before - active(sha))
        delta = _minus(_counters(objects, sha), _counters(objects, parents[0]) if parents else {})
        for key, value in delta.items():
            total[key] = total.get(key, 0.0) + value
    head = commits[0][0]
    final = _counters(objects, head)
    for key in sorted(set(total) | set(final)):
        if abs(total.get(key, 0.0) - final.get(key, 0.0)) > 1e-9:
            problems.append(
                f"counter {key[1]}.{key[2]}: {final.get(key, 0.0)} at HEAD, but the episodes' "
                f"deltas add up to {total.get(key, 0.0)}"
            )
    objects.close()
    figures = {"commits": len(commits), "merges": merges, "left_active": left,
               "counters": len(final)}  # fmt: skip
    return problems, figures


def check_tombstones(root: Path, ids: set[str]) -> tuple[list[str], list[str]]:
    """Every tombstone holds in the working tree: tombstoned still, its text active nowhere.

    Returns (problems, local): an active unit saying a tombstoned text is a problem: learned
    after (or beside) the tombstone, sync must refuse it; already active where the tombstone
    was made (a twin), `evolve review reject` and `evolve revert` retire it in the tombstone's
    own commit. Those twins are also listed in `local` (the figure the soak prints)."""
    units = _units(root)
    problems: list[str] = []
    local: list[str] = []
    dead = {uid: text for uid, (status, text) in units.items() if status == "tombstoned"}
    for uid in sorted(ids - set(dead)):
        problems.append(f"{root.name}: {uid} was tombstoned but is {units.get(uid, ('gone',))[0]}")
    said = {" ".join(t.lower().split()): uid for uid, t in dead.items()}
    for uid, (status, text) in sorted(units.items()):
        stone = said.get(" ".join(text.lower().split()))
        if status != "active" or stone is None:
            continue
        made = _git(root, "log", "--format=%H", "-1", "-S", "status: tombstoned", "--",
                    f"memory/{PERSONA}/{stone}.md").strip()  # fmt: skip
        added = _git(root, "log", "--format=%H", "--diff-filter=A", "--",
                     f"memory/{PERSONA}/{uid}.md").split()  # fmt: skip
        before = (
            bool(made and added)
            and not subprocess.run(
                ["git", "merge-base", "--is-ancestor", added[-1], f"{made}^"], cwd=root
            ).returncode
        )
        line = f"{root.name}: active {uid} says the text {stone} tombstones ({text!r})"
        problems.append(line)
        if before:
            local.append(line)
    return problems, local


# ---------------------------------------------------------------- the soak


@dataclass
class Soak:
    """What the soak did and found."""

    learners: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)


def soak(base: Path, learners: int = 3, episodes: int = 50, seed: int = 0) -> Soak:
    """Run the soak in `base` (an empty folder); every problem found is in `.problems`."""
    from evolve.remote import clone, push
    from evolve.workspace import init_workspace

    out = Soak()
    started = time.perf_counter()
    origin = init_workspace(base / "origin")
    bare = base / "remote.git"
    _git(base, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    _git(origin.root, "remote", "add", "origin", f"file://{bare}")
    push(origin)
    roots = [clone(f"file://{bare}", base / f"learner{k}")[0].root for k in range(learners)]
    script = Path(__file__).resolve()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                "learner",
                str(root),
                f"learner{k}",
                str(k),
                str(episodes),
                str(seed * 1000 + k),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for k, root in enumerate(roots)
    ]
    for proc in procs:
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            out.problems.append(f"a learner died ({proc.returncode}): {stderr.strip()[-3000:]}")
            continue
        out.learners.append(json.loads(stdout))
    trained = time.perf_counter() - started
    for item in out.learners:
        out.problems += [f"{item['name']} {line}" for line in item["failed"]]
    # the final sync: each pulls and pushes in turn, then each pulls what the later ones sent
    for root in [*roots, *roots]:
        for verb in ("pull", "push"):
            result = _evolve(root, verb)
            if result.returncode != 0:
                out.problems.append(f"final {verb} in {root.name}: {result.stderr.strip()}")
    tips = {(_git(r, "rev-parse", "HEAD").strip(), _git(r, "rev-parse", "refs/evolve/train").strip())
            for r in roots}  # fmt: skip
    tips.add((_git(bare, "rev-parse", "main").strip(),
              _git(bare, "rev-parse", "refs/evolve/train").strip()))  # fmt: skip
    if len(tips) != 1:
        out.problems.append(f"the clones and the remote differ after the final sync: {tips}")
    for root in roots:
        if _git(root, "status", "--porcelain"):
            out.problems.append(f"{root.name}: the working tree is not clean")
    memory = {_git(r, "rev-parse", "HEAD:memory").strip() for r in roots}
    if len(memory) != 1:
        out.problems.append(f"memory differs between the clones: {sorted(memory)}")
    problems, figures = check_history(roots[0])
    out.problems += problems
    tombstoned = {uid for item in out.learners for uid in item["tombstones"]}
    local: list[str] = []
    for root in roots:
        found, kept = check_tombstones(root, tombstoned)
        out.problems += found
        local += kept
    for repo in [*roots, bare]:
        fsck = subprocess.run(["git", "fsck", "--strict", "--no-progress", "--no-dangling"], cwd=repo,
                              capture_output=True, text=True)  # fmt: skip
        if fsck.returncode != 0 or fsck.stdout.strip():
            out.problems.append(f"git fsck --strict in {repo.name}: {fsck.stdout}{fsck.stderr}")
    fresh = _evolve(base, "clone", f"file://{bare}", str(base / "fresh"))
    logged: set[str] = set()
    if fresh.returncode != 0:
        out.problems.append(f"evolve clone: {fresh.stderr.strip()}")
    else:
        log = _evolve(base / "fresh", "log", "-n", "0", "--json")
        logged = set(_log_keys(json.loads(log.stdout)))
    for item in out.learners:
        missing = set(item["log"]) - logged
        if missing:
            out.problems.append(
                f"evolve log in a fresh clone misses {len(missing)} of {item['name']}'s "
                f"entries, e.g. {sorted(missing)[:3]}"
            )
    units = _units(roots[0])
    statuses: dict[str, int] = {}
    for status, _t in units.values():
        statuses[status] = statuses.get(status, 0) + 1
    actions: dict[str, int] = {}
    for item in out.learners:
        for kind, n in item["actions"].items():
            actions[kind] = actions.get(kind, 0) + n
    out.figures = {
        "learners": learners, "episodes_each": episodes, "seed": seed,
        "train_wall_s": round(trained, 1), "total_wall_s": round(time.perf_counter() - started, 1),
        "actions": actions, "push_retries_after_lost_race": sum(i["retries"] for i in out.learners),
        "refused": sum(len(i["refused"]) for i in out.learners),
        "tombstones": len(tombstoned), "active_twins_of_a_local_tombstone": len(local), "hand_notes": sum(i["notes"] for i in out.learners),
        "log_entries_fresh_clone": len(logged), "units": statuses, **figures,
        "problems": len(out.problems),
    }  # fmt: skip
    return out


def main(argv: list[str]) -> None:
    if argv[:1] == ["learner"]:
        root, name, seed, episodes, rng = argv[1:6]
        os.environ.pop("EVOLVE_WORKSPACE", None)
        print(json.dumps(learner(Path(root), name, int(seed), int(episodes), int(rng))))
        return
    raise SystemExit("run it through `python benchmarks/bench_sync.py --soak`")


if __name__ == "__main__":
    main(sys.argv[1:])
