"""Rules of the tuning round on loss, convergence, speed, memory and checkpoint logs, each on the
tune case that showed the gap (tests/corpus, tune split; source URL on each case's line 1)."""

from __future__ import annotations

import sys
from pathlib import Path

from trainmedic.triage import triage_text

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import read_case  # noqa: E402


def top_link(relative: str) -> str | None:
    case = read_case(CORPUS / "cases" / relative)
    assert case.split == "tune"  # unit tests read tune cases only
    findings = triage_text(case.excerpt).findings
    return findings[0].link if findings else None


def test_trainer_dicts_with_aligned_columns_are_read():
    """A Trainer paste whose columns were aligned by hand (`'grad_norm':    14.98`) is still
    read: the pre-clip grad norm jumping to 11140 is an explosion."""
    assert top_link("loss-spike/hf_trainer_grad_norm_11140_isolated_spike_lora_gemma4_unsloth_"
                    "5207.log") == "loss-spike#grad-norm-explosion"
