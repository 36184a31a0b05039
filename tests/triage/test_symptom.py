"""`triage --symptom`: what the user saw ranks the findings, and leads where the log is silent.

Log text comes from the public corpus (tests/corpus, tune cases; the source URL is each case's
first line) and the fixtures. Where a test needs a log with no known message whatever the trees
learn later, the signatures are taken away (an empty forest), as in tests/test_json_outputs.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import trainmedic.triage as triage
from trainmedic.cli import main
from trainmedic.commands.outputs import SCHEMAS, stamped
from trainmedic.errors import UsageError
from trainmedic.trees.forest import Forest, Ref
from trainmedic.triage import symptom as reported
from trainmedic.triage import triage_paths, triage_text
from trainmedic.triage.report import Finding
from trainmedic.triage.signatures import compile_forest

from .conftest import FIXTURES

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import REPORTED, read_case  # noqa: E402

CASES = CORPUS / "cases"
OOM_RANKS = FIXTURES / "multirank_oom"  # rank 1 runs out of memory, the others time out
STOPS_AFTER_NCCL = "nccl-hang/log_stops_after_p2p_ipc_setup_trainer_transformers_26724.log"
AFTER_LAST_EPOCH = \
    "scheduler/launcher_waitpid_after_last_epoch_exit_hang_masktextspotter_49.log"
UNKNOWN_ERROR = "checkpoint/moe_missing_optim_states_file_deepspeed_2737.log"
SAMPLES_PER_SEC = "slow-training/ds_samples_per_sec_13_bart_4gpu_wall_clock_255.log"
BARE_NAN = "loss-spike/bare_step_loss_turns_nan_fp16_yanmtt_7.log"


def excerpt(name: str) -> str:
    case = read_case(CASES / name)
    assert case.split == "tune"
    return case.excerpt


@pytest.fixture
def no_signatures(monkeypatch):
    """No signature at all: whatever the trees learn, these logs hold no known message."""
    monkeypatch.setattr(triage, "_signatures", lambda trees: compile_forest(Forest()))


def links(report) -> list[str]:
    return [f.link for f in report.findings]


# ---- the ranking rules ----------------------------------------------------------------------

def test_findings_that_fit_are_marked_and_lead():
    report = triage_paths([str(OOM_RANKS)], symptom="crash")
    assert report.symptom is not None and report.symptom.used == "fits"
    assert report.findings[0].link == triage_paths([str(OOM_RANKS)]).findings[0].link
    assert all(f.fits_symptom for f in report.findings)
    assert "fits what you reported (crash)" in report.findings[0].why


def test_a_strong_cause_that_does_not_fit_still_leads():
    """One rank's OOM makes the others hang: told "hang", the OOM stays first; the watchdog
    timeouts that fit come next, before anything else that does not fit."""
    alone = triage_paths([str(OOM_RANKS)])
    report = triage_paths([str(OOM_RANKS)], symptom="hang")
    top = report.findings[0]
    assert top.link == alone.findings[0].link and top.tree == "oom"
    assert top.fits_symptom is False and "a cause this clear in the log keeps its place" in top.why
    assert report.symptom is not None and report.symptom.used == "outranked"
    fit = [f.fits_symptom for f in report.findings[1:]]
    assert fit[0] is True and fit == sorted(fit, reverse=True)
    assert all(f.signature != reported.SIGNATURE for f in report.findings)  # a finding fits


def test_findings_that_fit_rank_above_weaker_ones_that_do_not():
    weak = Finding("weak-cause", "oom", "when", 0.6, "x", kind="cause")
    timeout = Finding("nccl-watchdog-timeout", "nccl-hang", "watchdog-timeout", 0.8, "y",
                      kind="symptom")
    ordered, use = reported.apply([weak, timeout], reported.SYMPTOMS["hang"], [], errors=1)
    assert [f.signature for f in ordered] == ["nccl-watchdog-timeout", "weak-cause"]
    assert use.used == "fits"
    assert ordered[1].why.endswith("does not fit what you reported (hang): ranked after those "
                                   "that do")


def test_a_weak_finding_that_does_not_fit_follows_the_answer(no_signatures):
    """An error no signature knows is a low-confidence guess; told "slow", the answer leads."""
    report = triage_text(excerpt(UNKNOWN_ERROR), name="x.log", symptom="slow")
    first, second = report.findings[:2]
    assert (first.signature, first.link) == (reported.SIGNATURE, "slow-training#measure-timers")
    assert second.guess and second.fits_symptom is False
    assert report.symptom is not None and report.symptom.used == "lead"
    # told "crash", the same guess fits (the died node's tree) and stays first
    crash = triage_text(excerpt(UNKNOWN_ERROR), name="x.log", symptom="crash")
    assert crash.findings[0].guess and crash.findings[0].fits_symptom
    assert all(f.signature != reported.SIGNATURE for f in crash.findings)


@pytest.mark.parametrize(("name", "symptom", "link"), [
    (SAMPLES_PER_SEC, "slow", "slow-training#measure-timers"),
    (SAMPLES_PER_SEC, "diverged", "loss-spike"),
    (SAMPLES_PER_SEC, "not-learning", "convergence"),
    (SAMPLES_PER_SEC, "crash", "triage#died"),
])
def test_with_no_finding_the_answer_gives_the_entry_node_and_claims_no_evidence(
        no_signatures, name, symptom, link):
    report = triage_text(excerpt(name), name="x.log", symptom=symptom)
    assert links(report) == [link]
    f = report.findings[0]
    assert f.evidence == [] and f.confidence == reported.CONFIDENCE and f.kind == "symptom"
    assert f.details == {"from": "reported symptom", "symptom": symptom, "refined": False}
    assert "from your answer (--symptom) alone" in f.why


def test_a_hang_whose_log_stops_after_nccl_set_up_is_a_silent_hang(no_signatures):
    text = excerpt(STOPS_AFTER_NCCL)
    report = triage_text(text, name="x.log", symptom="hang")
    f = report.findings[0]
    assert f.link == "nccl-hang#silent-hang" and f.confidence == reported.REFINED_CONFIDENCE
    lines = text.split("\n")
    assert [lines[e.line - 1] for e in f.evidence] == [e.text for e in f.evidence]
    assert "NCCL INFO" in f.evidence[-1].text
    assert report.to_dict()["next"] == "trainmedic walk nccl-hang#silent-hang"


def test_a_hang_after_the_last_epoch_is_an_exit_hang(no_signatures):
    report = triage_text(excerpt(AFTER_LAST_EPOCH), name="x.log", symptom="hang")
    assert links(report)[0] == "scheduler#exit-hang"
    assert "last epoch" in report.findings[0].evidence[0].text


def test_a_divergence_whose_log_prints_nan_goes_to_the_nan_node(no_signatures):
    report = triage_text(excerpt(BARE_NAN), name="x.log", symptom="diverged")
    assert links(report)[0] == "loss-spike#nan-loss"
    assert all("nan" in e.text for e in report.findings[0].evidence)


def test_a_file_tail_keeps_its_line_numbers(tmp_path):
    """The end of a big file is read with the lines' real numbers (the first, cut line
    dropped), as the evidence of a refined answer quotes them."""
    path = tmp_path / "big.log"
    path.write_text("".join(f"line {i}\n" for i in range(1, 30001)), encoding="utf-8")
    tail = reported.tail_of_file("big.log", str(path), str)
    assert tail is not None and tail.lines[-1] == (30000, "line 30000")
    assert all(text == f"line {n}" for n, text in tail.lines)
    mem = reported.tail_of_bytes("big.log", path.read_bytes(), str)
    assert mem.lines == tail.lines


def test_without_a_symptom_nothing_changes():
    data = triage_paths([str(OOM_RANKS)]).to_dict()
    assert "symptom" not in data
    assert all("fits_symptom" not in f for f in data["findings"])


def test_an_unknown_symptom_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown symptom 'froze'"):
        triage_text("x", symptom="froze")


def test_the_app_takes_the_answer_a_walk_gave():
    assert reported.from_walk([Ref("triage", "what"), Ref("nccl-hang", "symptom")]) == "hang"
    assert reported.from_walk([Ref("triage", "what"), Ref("triage", "died"),
                               Ref("oom", "when")]) == "crash"
    assert reported.from_walk([Ref("triage", "what"), Ref("triage", "area")]) is None
    assert reported.from_walk([Ref("nccl-hang", "symptom")]) is None


def test_every_answer_leads_to_nodes_that_exist_and_the_names_agree():
    from trainmedic import api
    from trainmedic.trees.forest import load_forest

    forest = load_forest()
    assert reported.NAMES == api.SYMPTOMS == tuple(r for r in REPORTED if r != "unknown")
    assert SCHEMAS["triage"]["properties"]["symptom"]["properties"]["given"]["enum"] == \
        list(reported.NAMES)
    what = forest.trees["triage"].nodes["what"]
    goes = {a.goto for a in what.answers}
    for s in reported.SYMPTOMS.values():
        assert s.tree in forest.trees and (s.node is None or s.node in forest.trees[s.tree].nodes)
        assert s.trees <= set(forest.trees), s.name
        for link in s.links:
            tree, _, node = link.partition("#")
            assert node in forest.trees[tree].nodes, link
        entry = s.tree if s.tree != "triage" else s.node
        assert entry in goes, s.name  # the entry question's own answer leads there
    for tree, node in (("nccl-hang", "silent-hang"), ("scheduler", "exit-hang"),
                       ("loss-spike", "nan-loss")):
        assert node in forest.trees[tree].nodes


# ---- the command line -----------------------------------------------------------------------

def test_a_bad_symptom_is_one_line_and_exit_two():
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    proc = subprocess.run([sys.executable, "-m", "trainmedic", "triage", str(OOM_RANKS),
                           "--symptom", "froze"], capture_output=True, text=True, timeout=60,
                          env=env)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("trainmedic: error: ") and "--symptom" in proc.stderr


def test_json_with_a_symptom_validates_and_says_how_it_was_used(capsys):
    assert main(["triage", str(OOM_RANKS), "--json", "--symptom", "hang"]) == 1
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMAS["triage"])
    assert data["symptom"]["given"] == "hang" and data["symptom"]["used"] == "outranked"
    assert reported.SymptomUse.from_dict(data["symptom"]).to_dict() == data["symptom"]
    assert reported.SymptomUse.from_dict({"given": "froze"}) is None
    assert Finding.from_dict(data["findings"][1]).fits_symptom is True
    assert [f["fits_symptom"] for f in data["findings"]][:2] == [False, True]


def test_json_when_the_answer_leads_validates(no_signatures):
    report = triage_text(excerpt(STOPS_AFTER_NCCL), name="x.log", symptom="hang")
    data = json.loads(json.dumps(stamped("triage", report.to_dict()), default=str))
    jsonschema.validate(data, SCHEMAS["triage"])
    assert data["symptom"]["used"] == "lead"
    assert data["findings"][0]["signature"] == reported.SIGNATURE


def test_plain_output_says_in_one_line_what_was_said(capsys):
    assert main(["triage", str(OOM_RANKS), "--symptom", "hang"]) == 1
    out = capsys.readouterr().out.splitlines()
    said = [line for line in out if line.startswith("You said the job froze (--symptom hang)")]
    assert len(said) == 1 and "still leads (oom#when)" in said[0]
