"""ZeRO-3's "Invalidate trace cache" warning: the cause of an MoE hang next to its timeouts, a
warning healthy runs also print when it stands alone (hook `in-trouble`)."""

from __future__ import annotations

from pathlib import Path

from trainmedic.triage import triage_text

CASE = (Path(__file__).resolve().parents[1] / "corpus" / "cases" / "moe"
        / "mixtral_zero3_trace_cache_allgather_hang_moe_llava_20.log")


def _case() -> tuple[str, str]:
    """The tune case's excerpt (a real MoE-LLaVA log) and its trace-cache line."""
    excerpt = CASE.read_text(encoding="utf-8").split("# ---\n", 1)[1]
    line = next(x for x in excerpt.splitlines() if "Invalidate trace cache @ step" in x)
    return excerpt, line


def _links(text: str, symptom: str | None = None) -> list[str]:
    return [f.link for f in triage_text(text, symptom=symptom).findings]


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
