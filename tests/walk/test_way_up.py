"""A walk opened where triage points stands on the tree's own route; "did not help" is kept;
a restart can be undone; what a walk knows from its log fills the fix's commands; and one fix
layout serves the app, browse, `--plain` and the runbook (issue 18 items 4-6, issue 21 item 7).
"""

from __future__ import annotations

import io
import json

from trainmedic.export.fixview import fix_view, target_text, versions_text, walk_fix_view
from trainmedic.export.report import build_report, render_report
from trainmedic.trees import Fix, Ref
from trainmedic.trees.model import Target
from trainmedic.triage.attachment import TriageAttachment
from trainmedic.triage.known import known_from
from trainmedic.triage.report import Evidence, Finding
from trainmedic.walk import WalkSession, route_to


def _attachment(link: str, **details) -> TriageAttachment:
    tree, _, node = link.partition("#")
    finding = Finding(signature="cuda-oom", tree=tree, node=node or None, confidence=0.9,
                      summary="rank 1: CUDA out of memory", ranks=[1],
                      evidence=[Evidence("logs/rank1.log", 2, "CUDA out of memory", 1)],
                      details=details)
    return TriageAttachment([finding], ["logs/rank1.log"], 0)


def test_route_is_the_trees_own_way_to_a_node(forest):
    assert route_to(forest, Ref("mem", "recompute")) == [(Ref("mem", "when"), 0),
                                                         (Ref("mem", "shrink"), 1)]
    assert route_to(forest, Ref("mem", "when")) == []  # the start itself


def test_a_walk_from_a_finding_goes_up_and_records_what_did_not_help(forest):
    s = WalkSession.from_finding(forest, "mem#recompute", _attachment("mem#recompute"))
    assert s.current == Ref("mem", "recompute") and s.origin == Ref("mem", "when")
    assert [step.implied for step in s.steps] == [True, True]
    assert s.steps[0].evidence == ["the log triage: rank 1: CUDA out of memory"]
    assert s.did_not_help()
    assert s.current == Ref("mem", "shrink") and s.tried_answers() == {1: "Turn on activation "
                                                                        "recomputation"}
    record = s.record()
    assert [t.node for t in record.tried] == ["mem#recompute"]
    page = render_report(record, forest)
    assert "Tried fix **Turn on activation recomputation** (`mem#recompute`): did not help." \
        in page
    assert "(implied by the log triage)" in page
    assert build_report(record, forest)["tried"][0]["question"] == "mem#shrink"
    again = WalkSession.from_dict(forest, json.loads(json.dumps(s.to_dict())))
    assert again.tried == s.tried and again.steps[0].implied


def test_restart_is_undone_by_back_until_the_next_answer(forest):
    s = WalkSession(forest, "mem")
    s.answer(0)
    s.answer(1)
    s.restart()
    assert s.current == Ref("mem", "when") and s.can_undo_restart
    assert s.back() and s.current == Ref("mem", "recompute") and len(s.steps) == 2
    s.restart()
    s.answer(3)  # a new answer: the restart is final
    assert not s.can_undo_restart and s.back() and s.current == Ref("mem", "when")
    assert not s.back()


def test_a_walk_with_nothing_in_it_is_not_kept(forest):
    s = WalkSession(forest, "mem")
    assert not s.record().worth_keeping
    s.set_launch_command("torchrun train.py")
    assert s.record().worth_keeping
    s = WalkSession(forest, "mem")
    s.triage = _attachment("mem#neighbour")
    assert s.record().worth_keeping


def test_known_values_fill_placeholders_and_say_so(forest):
    triage = _attachment("mem#neighbour", gpu=3)
    known = known_from(triage)
    assert known.get("GPU_INDEX").value == "3" and known.get("RANK").value == "1"
    s = WalkSession.from_finding(forest, "mem#neighbour", triage)
    view = walk_fix_view(s)
    step = view.steps[1]
    assert step.code == "nvidia-smi -q -i 3 -d MEMORY" and step.filled == ("GPU_INDEX",)
    assert view.from_log is not None and view.from_log.where == "rank1.log:2"
    plain = fix_view(forest.node(Ref("mem", "neighbour")), "mem#neighbour")
    assert plain.steps[1].code == "nvidia-smi -q -i <GPU_INDEX> -d MEMORY"
    assert plain.steps[1].unfilled == ("GPU_INDEX",) and plain.from_log is None


def test_the_recovery_triage_planned_comes_first_with_its_copy_key(forest):
    """A Megatron log that does not say which Megatron wrote it: both commands, first."""
    recovery = {"framework": "megatron", "action": "skip-data", "checkpoint": 29200,
                "checkpoint_path": "/ckpt/run1", "skip": [[29301, 29350]], "command": None,
                "text": "resume from the checkpoint of step 29200 and skip 29301-29350"}
    triage = _attachment("mem#recompute", recovery=recovery)
    s = WalkSession.from_finding(forest, "mem#recompute", triage)
    view = walk_fix_view(s)
    assert view.from_log is not None
    first, second = view.from_log.commands
    assert first.key == 1 and first.code == ("--load /ckpt/run1 --ckpt-step 29200 "
                                             "--iterations-to-skip $(seq 29300 29350)")
    assert second.key == 2 and second.code == ("--load /ckpt/run1 "
                                               "--skip-train-iteration-range 29301-29350")
    assert view.steps[0].key == 3  # the fix's own command comes after
    assert view.from_log.advice.startswith("resume from the checkpoint of step 29200")
    assert known_from(triage).get("ITERATION").value == "29200"
    recovery["command"] = "--load /ckpt/run1 --ckpt-step 29200 --iterations-to-skip 29300"
    recovery["framework"] = "megatron-lm"
    view = walk_fix_view(WalkSession.from_finding(forest, "mem#recompute", triage))
    assert [c.code for c in view.from_log.commands] == [recovery["command"]]


def test_targets_read_as_words():
    assert versions_text(">=0.12") == "≥ 0.12"
    assert versions_text("0.10-0.15") == "0.10 to 0.15"
    assert versions_text(">=2.21,<2.24") == "≥ 2.21, < 2.24"
    assert target_text(Target("megatron-lm", ">=0.12")) == "NVIDIA Megatron-LM core ≥ 0.12"
    assert target_text(Target("deepspeed")) == "DeepSpeed"


def test_one_fix_layout_in_plain_and_the_runbook(forest):
    """The same parts in the same order: target once, mark before command, every reference."""
    from trainmedic.export.markdown import tree_markdown
    from trainmedic.plain import make_console, print_fix

    fix = forest.node(Ref("hang", "straggler"))
    assert isinstance(fix, Fix)
    view = fix_view(fix, "hang#straggler")
    assert view.target == "PyTorch" and view.steps[1].target == "PyTorch ≥ 2.4"
    assert view.steps[0].target is None  # the fix's own target is said once, not per step
    out = io.StringIO()
    print_fix(make_console(out), view)
    plain = out.getvalue()
    page = tree_markdown(forest, forest.trees["hang"])
    page = page[page.index("Inspect the rank that fell behind"):]
    for text in (plain, page):
        order = [text.index("PyTorch"), text.index("A collective completes"),
                 text.index("py-spy dump"), text.index("PyTorch ≥ 2.4"),
                 text.index("DANGER (kill)"), text.index("kill <PID>")]
        assert order == sorted(order), text
        assert text.count("PyTorch ≥ 2.4") == 1
