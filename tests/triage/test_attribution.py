"""Who printed it: launcher prefixes give the rank and the host; torchrun's summary gives the
first failure; file names give ranks, but Slurm's job-id names do not.

The log lines are verbatim from the fixtures (sources on their line 1); the launcher prefixes
are the formats the launchers document, applied here.
"""

from __future__ import annotations

import pytest

from trainmedic.cli import main
from trainmedic.triage import triage_paths, triage_text
from trainmedic.triage.lineinfo import line_host, line_rank
from trainmedic.triage.sources import rank_from_name

from .conftest import FIXTURES

DEVICE_ASSERT = "RuntimeError: CUDA error: device-side assert triggered"  # test_api's line
OOM = (FIXTURES / "oom_fragmentation.log").read_text().splitlines()[1]


@pytest.mark.parametrize(("prefix", "rank", "host"), [
    ("[rank5]:", 5, None),                        # torchrun --tee / log_line_prefix_template
    ("5: ", 5, None),                             # srun -l
    ("[1,5]<stderr>:", 5, None),                  # mpirun --tag-output
    ("gpu-node-12: [rank5]: ", 5, "gpu-node-12"),  # pdsh / clush, then torchrun's prefix
    ("[pod/trainer-worker-5/pytorch] ", None, "trainer-worker-5"),  # kubectl logs --prefix
])
def test_launcher_prefixes(prefix, rank, host):
    assert (line_rank(prefix + DEVICE_ASSERT), line_host(prefix + DEVICE_ASSERT)) == (rank, host)
    finding = triage_text(prefix + DEVICE_ASSERT).findings[0]
    assert finding.link == "startup#device-assert"
    assert finding.ranks == ([rank] if rank is not None else [])
    assert finding.hosts == ([host] if host else [])


def test_nccl_prefix_names_the_host():
    line = (FIXTURES / "nccl_ib_completion.log").read_text().splitlines()[1]
    finding = triage_text(line).findings[0]
    assert finding.hosts == ["kp-ddp-worker-0"]


@pytest.mark.parametrize(("name", "rank"), [
    ("logs/rank3.log", 3), ("logs/rank_12.out", 12), ("slurm-1234-7.out", 7),
    ("slurm-884213.out", None), ("slurm-884213_7.out", None), ("slurm-884213.err.gz", None),
    ("node_rank2.log", None), ("train.log", None),
])
def test_rank_from_file_names_but_not_slurm_job_ids(name, rank):
    assert rank_from_name(name) == rank


def test_a_trailing_number_is_a_rank_only_among_several_logs(tmp_path):
    alone = tmp_path / "issue_941.log"
    alone.write_text(OOM + "\n")
    finding = triage_paths([str(alone)]).findings[0]
    assert finding.ranks == [] and "941" not in finding.summary
    named = tmp_path / "rank_5.log"
    named.write_text(OOM + "\n")
    assert triage_paths([str(named)]).findings[0].ranks == [5]
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "worker-0.log").write_text("step 10 ok\n")
    (folder / "worker-3.log").write_text(OOM + "\n")
    assert triage_paths([str(folder)]).findings[0].ranks == [3]


def test_slurm_output_file_is_not_a_rank(tmp_path):
    path = tmp_path / "slurm-884213.out"
    path.write_text(OOM + "\n")
    finding = triage_paths([str(path)]).findings[0]
    assert finding.ranks == [] and "884213" not in finding.summary


def test_child_failed_points_at_the_root_cause(capsys):
    path = str(FIXTURES / "childfailed_sigkill_root_cause.log")
    report = triage_paths([path])
    assert report.root_cause["rank"] == 0 and report.root_cause["exitcode"] == -9
    assert report.root_cause["host"].startswith("mlxlab115rp2n7682d40d9")
    top = report.findings[0]
    assert top.link == "oom#host-ram" and top.kind == "cause"  # -9: host OOM killer/scheduler
    child = next(f for f in report.findings if f.signature == "child-failed")
    assert child.kind == "context" and "rank 0" in child.summary and "SIGKILL" in child.summary
    assert main(["triage", path]) == 1
    assert "launcher: first failure rank 0" in capsys.readouterr().out


def test_sigkills_the_launcher_sent_after_the_first_failure_are_not_the_cause():
    """torchrun stops the other workers (SIGTERM, then SIGKILL): their -9 follows the root
    cause, rank 1, whose own exit is not -9."""
    report = triage_paths([str(FIXTURES / "childfailed_failures_then_root_cause.log")])
    assert report.root_cause["rank"] == 1
    assert all(f.link != "oom#host-ram" for f in report.findings)
    top = report.findings[0]
    assert top.guess and top.ranks == [1] and "failed first" in top.summary
