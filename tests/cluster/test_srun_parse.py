"""Attributing `srun --label` output and real srun error lines to nodes."""

from __future__ import annotations

import json

from trainmedic.cluster.fanout import parse_payload, parse_srun_output, srun_argv

from .fakecluster import FIXTURES, healthy_payload


def real_lines(name: str) -> str:
    return (FIXTURES / name).read_text().split("\n", 1)[1]


def test_real_launch_failures_name_the_nodes():
    nodes = [f"compute-od-gpu-st-p4d-24xlarge-{i}" for i in (33, 34, 35, 38, 39, 41)]
    stdout = f"1: {json.dumps(healthy_payload(nodes[1]))}\n"
    answers = parse_srun_output(nodes, stdout, real_lines("srun-launch-failures.txt"),
                                timed_out=False, timeout=60, returncode=1, duration=2.0)
    states = {a.host: a.state for a in answers}
    assert states == {n: "unreachable" for n in nodes} | {nodes[1]: "ok"}
    assert "Socket timed out on send/recv operation" in answers[0].detail


def test_real_task_error_line_places_the_task_on_its_node():
    nodes = ["orion-24-42", "orion-24-43"]
    answers = parse_srun_output(nodes, "", real_lines("srun-task-killed.txt"),
                                timed_out=False, timeout=60, returncode=1, duration=2.0)
    assert answers[0].state == "unreachable" and "Unable to layout tasks" in answers[0].detail
    assert answers[1].state == "error" and answers[1].detail == "Killed"


def test_label_padding_and_host_in_json_beat_task_order():
    nodes = [f"n{i:02d}" for i in range(12)]
    # task 0 answers for n05 (Slurm ordered the nodes differently from us)
    stdout = "\n".join(f" {0 if i == 5 else i}: " + line if i < 10 else f"{i}: " + line
                       for i in (5,) for line in json.dumps(healthy_payload("n05"),
                                                            indent=1).splitlines())
    answers = parse_srun_output(nodes, stdout, "", timed_out=True, timeout=3, returncode=None,
                                duration=3.0)
    states = {a.host: a.state for a in answers}
    assert states["n05"] == "ok" and states["n00"] == "no-answer"
    assert sum(s == "ok" for s in states.values()) == 1


def test_killed_at_our_deadline_is_no_answer():
    answers = parse_srun_output(["a", "b"], "", "srun: error: b: task 1: Terminated\n",
                                timed_out=True, timeout=5, returncode=-15, duration=5.0)
    assert [a.state for a in answers] == ["no-answer", "no-answer"]
    assert answers[1].detail == "no answer within 5s"


def test_step_that_never_starts_says_why():
    err = "srun: Job step creation temporarily disabled, retrying (Requested nodes are busy)\n"
    answers = parse_srun_output(["a"], "", err, timed_out=True, timeout=5, returncode=None,
                                duration=5.0)
    assert answers[0].state == "no-answer"
    assert answers[0].detail == ("no answer within 5s (srun said: srun: Job step creation "
                                 "temporarily disabled, retrying (Requested nodes are busy))")


def test_whole_step_failure_is_reported_on_every_node():
    err = ("srun: error: Unable to create step for job 77: Invalid node name specified\n")
    answers = parse_srun_output(["a", "b"], "", err, timed_out=False, timeout=5, returncode=1,
                                duration=0.2)
    assert all(a.state == "error" and "Invalid node name" in a.detail for a in answers)


def test_payload_must_be_probe_output():
    assert parse_payload('{"host": "x", "probes": [{"name": "gpu", "facts": {}}]}')
    assert parse_payload("Warning: banner\n" + json.dumps(healthy_payload("x"))) is not None
    assert parse_payload('{"host": "x"}') is None
    assert parse_payload("[1, 2]") is None
    assert parse_payload("") is None


def test_srun_argv_adds_user_options(monkeypatch):
    monkeypatch.setenv("TRAINMEDIC_SRUN_ARGS", "--gpus-per-node=8 --partition=gpu")
    argv = srun_argv(["n1", "n2"], "55", ["trainmedic", "probe", "--json", "--no-raw"])
    assert "--jobid=55" in argv and "--nodelist=n[1-2]" in argv
    assert argv.index("--partition=gpu") < argv.index("trainmedic")
