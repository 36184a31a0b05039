"""Cause over consequence, and the per-rank comparison of watchdog lines."""

from __future__ import annotations

from trainmedic.triage import triage_paths, triage_text
from trainmedic.triage.rank_compare import RankCompare
from trainmedic.triage.sources import rank_from_name

from .conftest import FIXTURES


def test_oom_on_one_rank_comes_before_the_timeouts_it_caused(use_grep):
    report = triage_paths([str(FIXTURES / "multirank_oom")], use_grep=use_grep)
    links = [f.link for f in report.findings]
    assert links[0] == "oom#when"
    assert report.findings[0].ranks == [1]
    assert "consequence" in report.findings[0].why and "3 ranks" in report.findings[0].why
    timeout = next(f for f in report.findings if f.signature == "nccl-watchdog-timeout")
    assert timeout.ranks == [0, 3, 4] and timeout.kind == "symptom"
    assert links.index("oom#when") < links.index("nccl-hang#watchdog-timeout")
    # rank 1 never reported the timeout: it is named, and tied to its OOM
    silent = next(f for f in report.findings if f.signature == "rank-silent")
    assert silent.ranks == [1] and "never reached" in silent.why
    assert report.ranks["ranks_seen"] == [0, 1, 3, 4]


def test_mismatched_collective_names_the_odd_rank():
    report = triage_paths([str(FIXTURES / "watchdog_mismatch.log")])
    top = report.findings[0]
    assert top.signature == "rank-mismatch"
    assert top.ranks == [7]
    assert "BROADCAST" in top.summary and "ALLREDUCE" in top.summary and "80078" in top.summary
    assert {e.line for e in top.evidence} >= {2, 4}


def test_lowest_last_completed_is_behind():
    # synthetic: two real-format lines per rank, rank 2 completed fewer collectives
    lines = []
    for rank, done in ((0, 41), (1, 41), (2, 39), (3, 41)):
        lines.append(
            f"[rank{rank}]:[E808 04:21:41.160918398 ProcessGroupNCCL.cpp:655] [Rank {rank}] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing "
            "out.")
        lines.append(
            f"[rank{rank}]:[E808 04:21:41.161 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID "
            f"0(default_pg) Rank {rank}] failure detected by watchdog at work sequence id: 42 PG "
            f"status: last enqueued work: 42, last completed work: {done}")
    report = triage_text("\n".join(lines))
    behind = next(f for f in report.findings if f.signature == "rank-behind")
    assert behind.ranks == [2]
    assert "#39" in behind.summary and "#41" in behind.summary
    assert report.findings[0].link == "nccl-hang#rank-behind"


def test_uniform_timeout_points_at_transport_not_a_rank():
    report = triage_paths([str(FIXTURES / "watchdog_uniform.log")])
    verdicts = report.ranks["verdicts"]
    assert [v["kind"] for v in verdicts] == ["uniform"]
    assert "transport" in verdicts[0]["summary"]
    assert not any(f.signature.startswith("rank-") for f in report.findings)


def test_rank_from_file_names():
    assert rank_from_name("logs/rank3.log") == 3
    assert rank_from_name("logs/rank_12.out") == 12
    assert rank_from_name("slurm-1234-7.out") == 7
    assert rank_from_name("train.log") is None


def test_rank_compare_ignores_lines_without_rank():
    rc = RankCompare()
    assert not rc.feed("Watchdog caught collective operation timeout: WorkNCCL(", None, ("f", 1))
    assert rc.verdicts(set()) == []


def test_launcher_prefixes_give_the_rank():
    text = (
        "[default3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
        "5: RuntimeError: CUDA error: device-side assert triggered\n"
    )
    report = triage_text(text)
    by_sig = {f.signature: f for f in report.findings}
    assert by_sig["cuda-oom"].ranks == [3]
    assert by_sig["device-assert"].ranks == [5]


def test_earliest_cause_first_across_timestamps():
    # synthetic, real formats: a DeepSpeed-logger OOM at 12:01:07, watchdog timeouts 10 min later
    text = "\n".join([
        "[rank0]:[E1201 12:11:07.100 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.",
        "[rank3]:[2024-12-01 12:01:07,000] [ERROR] [engine.py:1:step] torch.OutOfMemoryError: "
        "CUDA out of memory. Tried to allocate 2.00 GiB.",
    ])
    report = triage_text(text)
    top = report.findings[0]
    assert top.signature == "cuda-oom" and top.ranks == [3]
    assert "12:01:07" in top.why and "10 min before" in top.why


def test_flight_recorder_and_desync_reports_name_the_missing_ranks():
    # synthetic, in the formats of torch's fr_trace and TORCH_NCCL_DESYNC_DEBUG reports
    fr = triage_text("Not all ranks joining collective, sequence number: 1137\n"
                     "collective: nccl:all_reduce\nmissing ranks: {1, 6}\n")
    assert fr.findings[0].link == "nccl-hang#rank-behind" and fr.findings[0].ranks == [1, 6]
    desync = triage_text("\t - To our best knowledge, ranks [3] are the lagging ranks that caused "
                         "this timeout. They never joined any collectives")
    assert desync.findings[0].ranks == [3]
