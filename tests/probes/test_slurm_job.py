"""The `slurm-job` probe against real scontrol output, real batch scripts and failing tools."""

from __future__ import annotations

import pytest

from trainmedic.probes import slurm_job as sj
from trainmedic.probes.base import Budget
from trainmedic.probes.runner import run_probes
from trainmedic.trees import Question, load_forest
from trainmedic.trees.rules import suggest
from trainmedic.walk import facts_from

from .broken_tool import run_with_broken_tool
from .helpers import check_types, fixture_path, fixture_text


@pytest.fixture(autouse=True)
def no_job(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in sj.JOB_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("text, seconds", [
    ("20:27:30", 73650),          # RunTime of a running job
    ("2-00:00:00", 172800),       # TimeLimit=2-00:00:00
    ("00:00:00", 0),
    ("1440", 86400),              # sbatch -t 1440 (minutes)
    ("60:00", 3600),              # MM:SS
    ("3:59:00", 14340),
    ("1-12", 129600),             # D-HH
    ("0-03:00:00", 10800),
    ("UNLIMITED", None),
    ("Partition_Limit", None),
    ("", None),
])
def test_durations(text, seconds):
    assert sj.parse_duration(text) == seconds


def test_running_job_fields():
    fields = sj.parse_show_job(fixture_text("scontrol_show_job_running_2day_limit.txt"))
    assert fields["JobState"] == "RUNNING" and fields["TimeLimit"] == "2-00:00:00"
    assert fields["RunTime"] == "20:27:30" and fields["Restarts"] == "0"
    assert fields["Command"].endswith("sims_A=900/python_PinAndTrigger.py-00.slurm")
    assert "A" not in fields  # "sims_A=900" inside a value is not a field


@pytest.mark.parametrize("name, signal, lead, batch_only, requeue", [
    ("sbatch_signal_batch_usr1_after_comments.sh", "USR1", 240, True, None),
    ("sbatch_signal_steps_inline_comments.sh", "USR1", 120, False, None),
    ("sbatch_signal_sigusr1_lightning.sh", "USR1", 90, False, None),
    ("sbatch_signal_requeue_preempt.sh", "USR1", 60, False, True),
])
def test_signal_directives_of_real_batch_scripts(name, signal, lead, batch_only, requeue):
    found = sj.parse_directives(fixture_text(name))
    assert (found.signal_name, found.lead_s, found.batch_only, found.requeue) == (
        signal, lead, batch_only, requeue)


def test_no_signal_and_directives_after_the_first_command_do_not_count():
    script = fixture_text("sbatch_no_signal.sh")
    assert sj.parse_directives(script).signal is None
    # sbatch stops reading #SBATCH lines at the first command
    assert sj.parse_directives(script + "#SBATCH --signal=USR1@60\n").signal is None


def test_numeric_signal_and_default_lead():
    found = sj.ScriptDirectives(signal="10")
    assert found.signal_name == "USR1" and found.lead_s == sj.DEFAULT_SIGNAL_LEAD_S


def build(show: str, script: str | None):
    fields = sj.parse_show_job(fixture_text(show))
    directives = sj.parse_directives(fixture_text(script)) if script else None
    res = sj.build_result("10804568", fields, directives, "scontrol write batch_script", "")
    check_types(res)
    return res


def test_job_without_signal_warns_with_time_left():
    res = build("scontrol_show_job_running_2day_limit.txt", "sbatch_no_signal.sh")
    assert res.facts["time_limit_s"] == 172800 and res.facts["run_time_s"] == 73650
    assert res.facts["time_left_s"] == 172800 - 73650
    assert res.facts["signal_in_script"] is False and res.facts["restarts"] == 0
    assert res.status == "warn" and "no #SBATCH --signal" in res.summary
    assert "27 h 32 min left" in res.evidence["time_left_s"]


def test_job_with_batch_signal_is_ok():
    res = build("scontrol_show_job_running_2day_limit.txt",
                "sbatch_signal_batch_usr1_after_comments.sh")
    assert res.facts["script_signal"] == "USR1" and res.facts["signal_lead_s"] == 240
    assert res.facts["signal_batch_only"] is True and res.status == "ok"
    assert "batch shell only" in res.evidence["signal_in_script"]


def test_requeued_pending_job_without_limit():
    res = build("scontrol_show_job_pending_requeued_unlimited.txt", "sbatch_no_signal.sh")
    assert res.facts["unlimited"] is True and "time_limit_s" not in res.facts
    assert res.facts["requeue"] is True and res.facts["restarts"] == 1
    assert res.facts["state"] == "PENDING" and res.status == "ok"


def fake_scontrol(fakebin, show: str, script: str | None) -> None:
    write = f'/bin/cat "{fixture_path(script)}"' if script else "echo denied >&2; exit 1"
    fakebin("scontrol", f'case "$*" in "show job"*) /bin/cat "{fixture_path(show)}" ;; '
                        f'"write batch_script"*) {write} ;; *) exit 9 ;; esac')


def test_probe_end_to_end(fakebin, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "10804568")
    fake_scontrol(fakebin, "scontrol_show_job_running_2day_limit.txt",
                  "sbatch_signal_steps_inline_comments.sh")
    res = sj.probe(Budget(5))
    check_types(res)
    assert res.facts["script_signal"] == "USR1" and res.facts["signal_batch_only"] is False
    assert "#SBATCH --signal=USR1@120" in res.raw
    assert "export" not in res.raw  # only directives travel, never the script body


def test_unreadable_script_leaves_the_signal_unknown(fakebin, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "10804568")
    fake_scontrol(fakebin, "scontrol_show_job_running_2day_limit.txt", None)
    res = sj.probe(Budget(5))
    assert "signal_in_script" not in res.facts and res.facts["time_left_s"] > 0
    assert "not readable" in res.summary


def test_outside_slurm_and_bad_ids_are_unavailable(monkeypatch):
    assert "not inside a Slurm job" in run_probes(["slurm-job"], timeout=3)[0].summary
    monkeypatch.setenv("SLURM_JOB_ID", "12; rm -rf /")
    res = run_probes(["slurm-job"], timeout=3)[0]
    assert res.status == "unavailable" and "not a job id" in res.summary


OUTCOMES = {  # mode -> (status, words in the summary)
    "missing": ("unavailable", "not found"),
    "not-executable": ("unavailable", "permission denied"),
    "error-exit": ("fail", "boom"),
    "garbage": ("unavailable", "could not read"),
    "hang": ("unavailable", "timed out"),
}


@pytest.mark.parametrize("mode", list(OUTCOMES))
def test_probe_never_raises_and_never_hangs(fakebin, monkeypatch, mode):
    status, reason = OUTCOMES[mode]
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    res = run_with_broken_tool(fakebin, "scontrol", "slurm-job", mode)
    assert res.status == status and reason in res.summary, res.summary


def test_no_signal_in_the_script_suggests_the_time_limit_fix():
    q = load_forest().trees["scheduler"].nodes["who-ended"]
    assert isinstance(q, Question)
    bare = build("scontrol_show_job_running_2day_limit.txt", "sbatch_no_signal.sh")
    index, _lines = suggest(q, facts_from([bare])[0])
    assert index is not None and q.answers[index].goto == "time-limit"
    warned = build("scontrol_show_job_running_2day_limit.txt",
                   "sbatch_signal_sigusr1_lightning.sh")
    assert suggest(q, facts_from([warned])[0])[0] is None
    requeued = build("scontrol_show_job_pending_requeued_unlimited.txt",
                     "sbatch_signal_requeue_preempt.sh")
    assert suggest(q, facts_from([requeued])[0])[0] is None  # one restart is not a loop
