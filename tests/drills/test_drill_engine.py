"""The drill engine: cases, the expert path, scoring, jumps, triage and progress."""

from __future__ import annotations

import itertools
import json
import os
import stat
from pathlib import Path

import pytest
from drill_helpers import CORPUS, FIXTURE_TREES

from trainmedic.drills.cases import DrillCase, choose, drills_dir, load_cases, parse_case
from trainmedic.drills.debrief import debrief, triage_outcome
from trainmedic.drills.expert import expert_path
from trainmedic.drills.progress import DrillProgress, load_progress, record_result
from trainmedic.drills.run import DrillResult, DrillRun, expected_ref, node_known, playable
from trainmedic.errors import UsageError
from trainmedic.state import drill_progress_path
from trainmedic.trees import Ref, load_forest


@pytest.fixture(scope="module")
def small():
    forest = load_forest([FIXTURE_TREES], builtin=False)
    assert not forest.errors, forest.errors
    return forest


def real_case(cases, expect: str) -> DrillCase:
    """A real corpus excerpt, expected at a node of the fixture trees (only `expect` changes:
    the excerpt stays verbatim)."""
    first = next(c for c in cases if not c.healthy)
    area = expect.partition("#")[0] if expect != "none" else "healthy"
    return DrillCase(name=f"{area}/{Path(first.name).name}", area=area, expect=expect,
                     excerpt=first.excerpt, source=first.source, title=first.title)


# -- cases -----------------------------------------------------------------------------------
def test_a_checkout_reads_the_corpus_itself_and_every_case_parses(cases):
    assert drills_dir().resolve() == CORPUS.resolve()
    files = sorted(CORPUS.glob("*/*.log"))
    assert len(cases) == len(files) > 0
    assert {c.area for c in cases} == {p.parent.name for p in files}
    for case in cases:
        assert case.source.startswith("https://") and case.excerpt.strip()
        assert case.healthy == (case.area == "healthy")
        assert case.healthy or case.tree == case.area


def test_a_broken_case_is_skipped_with_its_reason(tmp_path):
    (tmp_path / "oom").mkdir()
    good = next(CORPUS.glob("oom/*.log"))
    (tmp_path / "oom" / "good.log").write_bytes(good.read_bytes())
    (tmp_path / "oom" / "no_separator.log").write_text("# source: https://x\n# expect: oom#x\n")
    (tmp_path / "oom" / "no_source.log").write_text("# expect: oom#x\n# ---\nline\n")
    os.mkfifo(tmp_path / "oom" / "fifo.log")  # must not block the reader
    found, skipped = load_cases(tmp_path)
    assert [c.name for c in found] == ["oom/good"]
    reasons = "\n".join(skipped)
    assert "no_separator.log: no '# ---' line" in reasons
    assert "no_source.log: no '# source: https://...' line" in reasons
    assert "fifo.log: not a regular file" in reasons


def test_parse_keeps_the_excerpt_verbatim():
    text = next(CORPUS.glob("nccl-hang/*.log")).read_text(encoding="utf-8")
    case = parse_case(text, "nccl-hang/x", "nccl-hang")
    assert text.endswith(case.excerpt.rstrip("\n") + "\n") or text.endswith(case.excerpt)
    with pytest.raises(ValueError, match="expect must be"):
        parse_case(text.replace("# expect:", "# expect: bad value #"), "x/y", "x")


def test_choose_by_seed_is_reproducible_and_ignores_progress(cases):
    picks = [choose(cases, seed=seed).name for seed in range(20)]
    assert picks == [choose(cases, seed=seed, done=[p]).name for seed, p in enumerate(picks)]
    assert len(set(picks)) > 1  # the seed does choose
    oom = [choose(cases, area="oom", seed=seed) for seed in range(10)]
    assert {c.area for c in oom} == {"oom"}


def test_choose_without_seed_prefers_drills_not_done(cases):
    pool = [c for c in cases if c.area == "healthy"]
    left = pool[len(pool) // 2]
    done = [c.name for c in pool if c is not left]
    assert {choose(cases, area="healthy", done=done).name for _ in range(10)} == {left.name}
    assert choose(cases, area="healthy", done=[c.name for c in pool]).area == "healthy"


def test_choose_errors_name_the_choices(cases):
    with pytest.raises(UsageError, match=r"no drills for 'nosuch' \(areas: .*healthy"):
        choose(cases, area="nosuch")
    with pytest.raises(UsageError, match="no drill 'oom/nosuch'"):
        choose(cases, name="oom/nosuch")
    one = cases[3]
    assert choose(cases, name=one.name + ".log") == one
    assert choose(cases, name=one.name.split("/")[1]) == one
    with pytest.raises(UsageError, match="no drill cases"):
        choose([])


# -- the expert path -------------------------------------------------------------------------
def test_every_corpus_case_is_reachable_from_the_entry(forest, cases):
    usable = playable(forest, cases)
    assert len(usable) == len([c for c in cases if c.healthy or c.tree in forest.trees])
    for case in usable:
        if case.healthy:
            continue
        target = expected_ref(forest, case)
        path = DrillRun(forest, case).expert()
        assert path is not None, case.name
        assert path[0].node == "triage#what" and path[-1].goto == str(target)
        for step, following in itertools.pairwise(path):
            assert step.goto == following.node  # a connected route


def test_among_equal_routes_the_one_entering_the_target_tree_first_wins(small):
    path = expert_path(small, Ref("loss", "nan"), entry="entry")
    assert [(s.node, s.answer) for s in path] == [("entry#what", 1), ("loss#symptom", 0)]
    assert expert_path(small, Ref("entry", "what"), entry="entry") == []
    assert expert_path(small, Ref("entry", "what"), entry="loss") is None  # no way back up


# -- scoring ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("answers", "outcome", "score"), [
    ([1, 0], "node", 1.0),  # the loss, NaN: the expert path
    ([0, 0], "node", 1.0),  # died, NaN check: another route to the same node
    ([1, 0, 0], "node", 1.0),  # through the node and further down
    ([1, 1], "tree", 0.5),  # the right tree, another node
    ([2], "elsewhere", 0.0),
])
def test_scoring_follows_the_route_that_ends_where_the_trainee_stopped(small, cases, answers,
                                                                       outcome, score):
    drill = DrillRun(small, real_case(cases, "loss#nan"), entry="entry")
    for index in answers:
        drill.answer(index)
    result = drill.finish()
    assert (result.outcome, result.score) == (outcome, score)
    assert result.moves == len(answers) and result.expert_moves == 2
    assert result.path[0] == "entry#what" and result.ended == result.path[-1]


def test_a_thread_that_pins_only_the_tree_scores_the_tree_in_full(small, cases):
    for expect in ("loss#?", "loss#not-in-the-trees-yet"):
        case = real_case(cases, expect)
        assert expected_ref(small, case) == Ref("loss", "symptom")
        assert not node_known(small, case)
        drill = DrillRun(small, case, entry="entry")
        drill.answer(1)
        drill.answer(1)
        result = drill.finish()
        assert (result.outcome, result.score, result.node_known) == ("tree", 1.0, False)


def test_a_healthy_log_wants_nothing_wrong(small, cases):
    case = real_case(cases, "none")
    assert DrillRun(small, case, entry="entry").finish(nothing_wrong=True).outcome == "node"
    drill = DrillRun(small, case, entry="entry")
    drill.answer(2)  # "nothing is wrong yet" leads to a fix: not the same as saying so
    assert drill.finish().outcome == "elsewhere"
    sick = DrillRun(small, real_case(cases, "loss#nan"), entry="entry")
    assert sick.finish(nothing_wrong=True).outcome == "elsewhere"


def test_jumps_start_a_leg_and_back_undoes_answers_then_jumps(small, cases):
    drill = DrillRun(small, real_case(cases, "loss#nan"), entry="entry")
    drill.answer(0)
    assert drill.jump("loss#spike") == Ref("loss", "spike")
    assert drill.path() == [Ref("loss", "spike")]
    with pytest.raises(UsageError, match="no tree 'nosuch'"):
        drill.jump("nosuch")
    assert drill.back() and drill.session.current == Ref("entry", "died")
    assert drill.back() and drill.session.current == Ref("entry", "what")
    assert not drill.back()
    drill.jump("loss#nan")
    result = drill.finish()
    assert result.outcome == "node" and result.moves == 3 and result.jumps == ["loss#spike",
                                                                              "loss#nan"]


def test_triage_is_the_real_engine_and_its_jump_follows_its_first_finding(forest, cases):
    from trainmedic.triage import triage_text

    case = next(c for c in playable(forest, cases)
                if not c.healthy and triage_text(c.excerpt).findings)
    drill = DrillRun(forest, case)
    ref = drill.jump_with_triage()
    assert drill.used_triage
    first = triage_text(case.excerpt).findings[0]
    assert ref == forest.parse_ref(first.link)
    report = debrief(drill, drill.finish())
    assert report.triage[0].link == first.link
    assert report.triage_outcome == triage_outcome(drill)
    assert "drill.log" in report.triage[0].evidence or not first.evidence  # never the case name
    assert case.name.split("/")[1] not in report.triage[0].evidence


def test_the_debrief_reveals_the_thread_and_the_expert_path(forest, cases):
    case = next(c for c in playable(forest, cases) if not c.healthy and c.resolution)
    drill = DrillRun(forest, case)
    report = debrief(drill, drill.finish())
    sections = dict(report.sections())
    assert list(sections) == ["Your answer", "The expert path",
                              "What triage says on this log", "The thread"]
    assert case.source in sections["The thread"]
    assert any(case.resolution[:40] in line for line in sections["The thread"])
    assert f"→ {report.target}" in "\n".join(sections["The expert path"])
    assert json.loads(json.dumps(report.to_dict()))["case"]["name"] == case.name


# -- progress ----------------------------------------------------------------------------------
def test_progress_is_saved_privately_and_summed_by_area(small, cases):
    for answers in ([1, 0], [1, 1], [2]):
        drill = DrillRun(small, real_case(cases, "loss#nan"), entry="entry")
        for index in answers:
            drill.answer(index)
        record_result(drill.finish())
    record_result(DrillRun(small, real_case(cases, "none"), entry="entry")
                  .finish(nothing_wrong=True))
    path = drill_progress_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    progress, problem = load_progress()
    assert problem == "" and len(progress.results) == 4
    rows = {row.area: row for row in progress.by_area()}
    assert (rows["loss"].done, rows["loss"].node, rows["loss"].tree,
            rows["loss"].elsewhere) == (3, 1, 1, 1)
    assert rows["loss"].score == pytest.approx(0.5)
    assert rows["healthy"].score == 1.0
    assert rows["all"].done == 4 and rows["all"].points == 2.5


def test_a_corrupt_or_foreign_progress_file_is_reported_never_fatal():
    path = drill_progress_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    progress, problem = load_progress()
    assert progress.results == [] and "corrupt" in problem
    path.write_text(json.dumps({"version": 99, "results": []}))
    assert "another trainmedic version" in load_progress()[1]
    good = DrillResult(case="oom/x", area="oom", expect="oom#when", ended="oom#when",
                       outcome="node", moves=3, expert_moves=3)
    path.write_text(json.dumps({"version": 1, "results": [
        good.to_dict(), {"case": 3}, "junk", {"case": "oom/y", "outcome": "maybe"}]}))
    progress, problem = load_progress()
    assert problem == "" and progress.results == [good]
    assert DrillResult.from_dict(good.to_dict()) == good
    assert DrillProgress.from_dict({"results": "no"}).results == []
