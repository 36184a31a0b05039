from __future__ import annotations

import json

import pytest

from trainmedic.errors import UsageError
from trainmedic.probes.base import ProbeResult
from trainmedic.trees import Ref
from trainmedic.walk import WalkSession


def test_walk_to_fix_records_path(forest):
    s = WalkSession(forest, "mem")
    assert s.current == Ref("mem", "when") and not s.finished
    s.answer(0)
    assert s.current == Ref("mem", "shrink")
    s.answer(1)
    assert s.current == Ref("mem", "recompute") and s.finished
    assert [str(r) for r in s.path()] == ["mem#when", "mem#shrink", "mem#recompute"]
    step = s.steps[0]
    assert (step.answer, step.answer_text, step.goto) == (0, "At the first iteration", "mem#shrink")


def test_back_and_restart(forest):
    s = WalkSession(forest, "mem")
    assert s.back() is False
    s.answer(0)
    s.answer(0)
    assert s.back() is True
    assert s.current == Ref("mem", "shrink") and len(s.steps) == 1
    s.restart()
    assert s.current == Ref("mem", "when") and s.steps == [] and s.stack == []


def test_cross_tree_link_pushes_and_returns(forest):
    s = WalkSession(forest, "mem")
    s.answer(3)
    assert s.current == Ref("hang", "stuck")
    assert s.stack == ["mem#when"]
    s.answer(1)
    assert s.current == Ref("hang", "collective")
    assert s.return_from_link() is True
    assert s.current == Ref("mem", "when") and s.stack == [] and s.steps == []
    s.answer(3)
    assert s.back() is True
    assert s.stack == [] and s.current == Ref("mem", "when")


def test_out_of_range_names_node(forest):
    s = WalkSession(forest, "mem")
    with pytest.raises(UsageError, match=r"answer 7 is out of range at mem#when \(1-4\)"):
        s.answer(6)


def test_probe_suggestion_recorded_as_evidence(forest):
    s = WalkSession(forest, "mem")
    s.attach_probes([ProbeResult("gpu", "warn", "GPU 3 nearly full",
                                 facts={"max_memory_fraction": 0.99},
                                 evidence={"max_memory_fraction": "GPU 3: 79.4 of 80.0 GiB used"})])
    index, lines = s.suggestion()
    assert index == 2
    assert any("GPU 3: 79.4 of 80.0 GiB used" in line for line in lines)
    s.answer(2)
    assert s.steps[0].suggested == 2 and s.steps[0].evidence == lines


def test_round_trip_through_json(forest):
    s = WalkSession(forest, "mem")
    s.attach_probes([ProbeResult("env", "ok", "fine", facts={"nccl_debug": "INFO"})])
    s.answer(3)
    data = json.loads(json.dumps(s.to_dict()))
    assert set(data) == {"version", "id", "tree", "started", "updated", "current", "finished",
                         "steps", "stack", "probes", "triage", "launch_command", "notes"}
    assert set(data["steps"][0]) == {"node", "question", "answer", "answer_text", "goto",
                                     "suggested", "evidence", "time"}
    back = WalkSession.from_dict(forest, data)
    assert back.to_dict() == data
    assert back.back() and back.current == Ref("mem", "when") and back.stack == []


def test_from_dict_rejects_data_that_no_longer_fits(forest):
    s = WalkSession(forest, "mem")
    s.answer(0)
    data = s.to_dict()
    data["steps"][0]["node"] = "mem#gone"
    with pytest.raises(UsageError, match="no node 'gone'"):
        WalkSession.from_dict(forest, data)
    data = s.to_dict()
    data["version"] = 9
    with pytest.raises(UsageError, match="unsupported version"):
        WalkSession.from_dict(forest, data)
    data = s.to_dict()
    del data["current"]
    with pytest.raises(UsageError, match="malformed"):
        WalkSession.from_dict(forest, data)


def test_start_at_node(forest):
    s = WalkSession(forest, "hang#collective")
    assert s.finished and s.fix is not None and s.fix.id == "collective"
    with pytest.raises(UsageError):
        s.answer(0)


def test_saved_walk_never_holds_a_token_from_the_launch_command(forest):
    session = WalkSession(forest, "mem")
    session.launch_command = ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456 torchrun "
                              "pretrain_gpt.py --num-layers 2")
    saved = json.dumps(session.to_dict())
    assert "hf_abcdefghijklmnopqrstuvwxyz123456" not in saved
    assert "pretrain_gpt.py --num-layers 2" in saved


def test_each_probe_runs_once_per_walk_unless_asked_again(forest):
    s = WalkSession(forest, "mem")
    assert s.take_due_probes() == ["memory", "gpu"]
    assert s.take_due_probes() == []  # once per walk
    assert s.take_due_probes(again=True) == ["memory", "gpu"]
    s.answer(0)  # mem#shrink reads no probe
    assert s.take_due_probes() == []


def test_a_new_launch_command_makes_the_probes_that_read_it_due_again(forest):
    s = WalkSession(forest, "mem")
    assert s.wants_launch_command  # mem#when reads the memory probe
    s.take_due_probes()
    s.set_launch_command("  torchrun pretrain_gpt.py --num-layers 2\n")
    assert s.launch_command == "torchrun pretrain_gpt.py --num-layers 2"
    assert s.probe_context().launch_command == s.launch_command
    assert s.take_due_probes() == ["memory"]  # the gpu probe does not read it


def test_plain_and_answers_run_the_same_probes_with_the_walks_launch_command(forest):
    """The three front ends share the walk's driver: same probes, same context, same record."""
    import io

    from trainmedic.plain import run_answers, run_plain

    calls = []

    def runner(names, context):
        calls.append((list(names), context.launch_command))
        fits = "small" in context.launch_command
        return [ProbeResult("memory", "ok" if fits else "fail", "estimate",
                            facts={"fits": fits}, evidence={"fits": f"fits = {fits}"})]

    records = []
    for drive in (lambda s: run_plain(s, io.StringIO("1\n"), io.StringIO(), probe_runner=runner,
                                      save=records.append),
                  lambda s: run_answers(s, [1, 1], io.StringIO(), probe_runner=runner,
                                        save=records.append)):
        session = WalkSession(forest, "mem")
        session.set_launch_command("torchrun pretrain_gpt.py --huge")
        drive(session)
        assert session.steps[0].suggested == 0  # memory.fits == false suggests answer 1
        assert session.steps[0].evidence[0] == "fits = False"  # the probe's own words
        assert records[-1].steps == session.steps  # and that is what was saved
    assert calls == [(["memory", "gpu"], "torchrun pretrain_gpt.py --huge")] * 2
