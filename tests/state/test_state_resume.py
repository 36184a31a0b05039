"""A walk saved after every step resumes exactly where it stopped (engine: trainmedic.walk)."""

from __future__ import annotations

import json
from pathlib import Path

from trainmedic import walk
from trainmedic.saved_walks import find_walk, save_walk
from trainmedic.trees import load_forest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
SAVED = Path(__file__).resolve().parents[1] / "fixtures" / "saved_walks"  # see its README


def test_save_after_each_step_then_resume_gives_the_same_session():
    forest = load_forest([EXAMPLES], builtin=False)
    session = walk.WalkSession(forest, "disk-full")
    save_walk(session.record())
    session.answer(2)  # something else -> other-tree-link
    save_walk(session.record())
    session.answer(1)  # all ranks stopped -> example-hang#all-stopped
    session.launch_command = "torchrun --nproc-per-node 8 pretrain_gpt.py"
    save_walk(session.record())
    saved, skipped = find_walk(None)
    assert skipped == [] and saved is not None and saved.id == session.id
    resumed = walk.WalkSession.from_record(forest, saved.record)
    assert resumed.to_dict() == session.to_dict()
    assert str(resumed.current) == "example-hang#all-stopped" and resumed.finished


def test_a_walk_the_0_1_0_app_saved_from_a_triage_finding_resumes_with_its_evidence():
    forest = load_forest([SAVED / "trees"], builtin=False)
    saved, skipped = find_walk(str(SAVED / "app-triage-walk.json"))
    assert skipped == [] and saved is not None
    session = walk.WalkSession.from_record(forest, saved.record)
    assert str(session.current) == "oom#fragmentation" and session.finished
    triage = session.triage
    assert triage is not None and triage.finding is not None
    finding = triage.finding
    assert finding.link == "oom#fragmentation"
    assert finding.summary.startswith("rank 1: CUDA out of memory (tried 22.78 GiB")
    [evidence] = finding.evidence
    assert (evidence.file, evidence.line) == ("rank1.log", 2)
    assert evidence.text.startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to "
                                    "allocate 22.78 GiB.")


def test_a_walk_0_1_0_saved_with_plain_prompts_resumes_with_its_probes_and_steps():
    forest = load_forest([SAVED / "trees"], builtin=False)
    data = json.loads((SAVED / "plain-walk.json").read_text(encoding="utf-8"))
    session = walk.WalkSession.from_dict(forest, data)
    assert str(session.current) == "oom#first-iteration"
    assert [step.node for step in session.steps] == ["oom#message", "oom#unallocated",
                                                      "oom#when"]
    assert session.steps[2].suggested == 0 and session.steps[2].evidence[0].startswith(
        "memory.fits = false")
    assert [p.name for p in session.probes] == ["gpu-processes", "memory"]
    assert session.probes[0].facts["pids"] == [4242, 4343]
    assert session.launch_command.startswith("torchrun --nproc-per-node 8 pretrain_gpt.py")
    # saved again, it reads back the same; only the launch command is redacted on the way
    again = session.to_dict()
    assert again["steps"] == data["steps"] and again["probes"] == data["probes"]
    assert {k: v for k, v in again.items() if k not in ("updated", "launch_command")} == \
        {k: v for k, v in data.items() if k not in ("updated", "launch_command")}
