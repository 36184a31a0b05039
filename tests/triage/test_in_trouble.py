"""ZeRO-3's "Invalidate trace cache" warning: the cause of an MoE hang next to its timeouts, a
warning healthy runs also print when it stands alone (hook `in-trouble`)."""

from __future__ import annotations

from pathlib import Path

from .routed import links as _links

CASE = (Path(__file__).resolve().parents[1] / "corpus" / "cases" / "moe"
        / "mixtral_zero3_trace_cache_allgather_hang_moe_llava_20.log")


def _case() -> tuple[str, str]:
    """The tune case's excerpt (a real MoE-LLaVA log) and its trace-cache line."""
    excerpt = CASE.read_text(encoding="utf-8").split("# ---\n", 1)[1]
    line = next(x for x in excerpt.splitlines() if "Invalidate trace cache @ step" in x)
    return excerpt, line


def test_next_to_the_watchdog_timeouts_it_is_the_cause():
    excerpt, _line = _case()
    links = _links(excerpt)
    assert links[0] == "moe#zero3-expert-divergence"
    assert "nccl-hang#watchdog-timeout" in links


def test_alone_it_is_no_finding():
    excerpt, line = _case()
    progress = excerpt.splitlines()[1]  # the HF Trainer's own progress line before it
    assert progress.startswith("{'loss':")
    assert _links(f"{progress}\n{line}\n{progress}\n") == []


def test_alone_it_leads_when_the_user_says_the_job_froze():
    _excerpt, line = _case()
    assert _links(f"{line}\n", symptom="hang")[0] == "moe#zero3-expert-divergence"
    assert "moe#zero3-expert-divergence" not in _links(f"{line}\n", symptom="slow")


def test_next_to_an_error_no_signature_knows_it_leads():
    _excerpt, line = _case()
    links = _links(f"{line}\nTraceback (most recent call last):\n"
                   "  File \"train.py\", line 3, in <module>\n"
                   "ZeroDivisionError: division by zero\n")
    assert links[0] == "moe#zero3-expert-divergence"


# NCCL >= 2.12 prints it at INFO level (https://github.com/NVIDIA/nccl/issues/1410); NCCL's
# maintainers: with no IB NCCL uses sockets, "since you only run NCCL on a single node, this may
# not be even relevant" (https://github.com/NVIDIA/nccl/issues/259)
SOCKET_INFO = ("h100-kickoff-llama-70b-chat-20230328-bcf75c4f6-gn6nd:2340:2384 [4] NCCL INFO "
               "Failed to open libibverbs.so[.1]")
# the same watchdog line as nccl-hang.yaml's own example (PyTorch 2.x)
STUCK = ("[rank2]:[E419 10:53:25.421620797 ProcessGroupNCCL.cpp:1484] [PG ID 2 PG GUID 9 Rank 2] "
         "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
         "monitoring enqueued collectives.")


def test_a_socket_fallback_alone_is_no_finding_but_answers_a_slow_run():
    """NCCL's fall-back to TCP sockets (hook `slow-or-trouble`): one node prints it and is fine."""
    assert _links(f"{SOCKET_INFO}\n") == []
    assert _links(f"{SOCKET_INFO}\n", symptom="slow")[0] == "multi-node#slow-cross-node"
    assert _links(f"{SOCKET_INFO}\n", symptom="hang") == ["multi-node#slow-cross-node"]
    assert "multi-node#slow-cross-node" not in _links(f"{SOCKET_INFO}\n", symptom="diverged")


def test_a_socket_fallback_next_to_a_stuck_watchdog_is_reported_after_it():
    links = _links(f"{SOCKET_INFO}\n{STUCK}\n")
    assert "multi-node#slow-cross-node" in links
    assert links[0] == "nccl-hang#watchdog-stuck", links
