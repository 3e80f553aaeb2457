"""The batch path with scripted models: refusals logged, partial batches, the sleep pass."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from evolve.agent import section
from evolve.history import TRAIN_REF
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import load_units
from evolve.skills import BATCH_KIND, CONSOLIDATE_KIND, live_skills
from evolve.store import GitStore
from evolve.train import train
from evolve.workspace import Workspace


def _reflector(leak: bool) -> MockLLM:
    def answer(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        prompt = messages[-1].content
        topic = (section(prompt, "topic") or "").strip()
        words = re.findall(r"[A-Z][a-z]+", (section(prompt, "task") or "").split(" ", 1)[1])
        name = words[0]  # the contact, or a quoted title: the task's own words
        lesson = f"After the last {topic} write, read the item back before completing the task."
        if leak:
            lesson += f" This matters with {name}."
        return json.dumps({"lesson": lesson, "trigger": f"a {topic} task", "topic": topic})

    return MockLLM(answer)


def _evolver() -> MockLLM:
    def answer(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        prompt = messages[-1].content
        if schema is not None and schema.name == "skill_consolidate":
            ids = re.findall(r"^\[(skill-[0-9a-f]+)\] shelf=topics/venmo", prompt, re.M)
            actions = [{"action": "cut", "id": ids[0], "why": "vague"}] if ids else []
            return json.dumps({"actions": actions})
        refs = re.findall(r"^\[(c\d+)\]", section(prompt, "candidates") or "", re.M)
        return json.dumps(
            {"verdicts": [{"candidate": r, "verdict": "ADD", "why": "new"} for r in refs]}
        )

    return MockLLM(answer)


def _commits(store: GitStore, kind: str) -> list[str]:
    shas = store.git("log", "--format=%H", "HEAD").split()
    return [s for s in shas if store.commit_info(s).trailers.get("Evolve-Kind") == kind]


def test_a_batch_of_refused_candidates_is_recorded_with_the_reasons(workspace: Workspace) -> None:
    report = train(workspace, recipe="skills", episodes=4, updater_llm=_reflector(leak=True),
                   evolver_llm=_evolver())  # fmt: skip
    assert report.commits == []  # every lesson named the task's contact: nothing written
    store = workspace.store
    assert not _commits(store, BATCH_KIND)
    record = store.commit_info(TRAIN_REF)
    if record.subject.startswith("runs "):  # the stream's record of the episodes it ran
        record = store.commit_info(f"{TRAIN_REF}~1")
    assert "Refused:" in record.body and "filter" in record.body and "from the task" in record.body
    assert record.trailers["Evolve-Episodes"] == "0 1 2 3"


def test_a_partial_batch_commits_at_the_end_and_the_sleep_pass_runs_every_n_batches(
    workspace: Workspace,
) -> None:
    cfg = workspace.config
    skills = cfg.skills.model_copy(update={"batch_size": 3, "consolidate_every": 2})
    ws = Workspace(workspace.root, config=cfg.model_copy(update={"skills": skills}))
    report = train(ws, recipe="skills", episodes=7, updater_llm=_reflector(leak=False),
                   evolver_llm=_evolver())  # fmt: skip
    store = ws.store
    batches = _commits(store, BATCH_KIND)
    spans = [store.commit_info(s).trailers["Evolve-Episodes"] for s in reversed(batches)]
    assert spans and spans[-1] == "6"  # the partial batch at the end of the run
    assert all(len(s.split()) == 3 for s in spans[:-1])
    sleeps = _commits(store, CONSOLIDATE_KIND)
    assert len(sleeps) == 1  # after batch 1 (the second): every 2 batches
    info = store.commit_info(sleeps[0])
    assert info.trailers["Evolve-Batch"] == "1" and "cut" in info.trailers["Evolve-Ops"]
    cut = info.trailers["Evolve-Ops"].split("=", 1)[1]
    gone = next(u for u in load_units(ws.root) if u.id == cut)
    assert gone.status == "revoked" and "sleep pass" in (gone.reason or "")
    assert cut not in live_skills(load_units(ws.root))
    assert set(report.commits) <= set(batches)


def test_under_review_new_skills_wait_and_approve_puts_them_on_their_shelf(
    workspace: Workspace,
) -> None:
    from evolve.review import approve

    train(workspace, recipe="skills", episodes=4, review=True,
          updater_llm=_reflector(leak=False), evolver_llm=_evolver())  # fmt: skip
    skills = [u for u in load_units(workspace.root) if u.shelf is not None]
    assert skills and all(u.status == "pending" for u in skills)
    approve(workspace, skills[0].id)
    after = {u.id: u for u in load_units(workspace.root)}[skills[0].id]
    assert after.status == "active" and after.path() == skills[0].path()
