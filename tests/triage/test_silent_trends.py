"""Silent failures that show only as numbers over time: a loss at chance level, a throughput far
below what the hardware gives. Each rule on the tune case that showed the gap (tests/corpus,
tune split; source URL on each case's line 1) and on logs that must stay silent."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from trainmedic.triage import triage_text
from trainmedic.triage.trends import chance

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import load_cases, read_case  # noqa: E402


def findings(relative: str) -> list[tuple[str, str]]:
    case = read_case(CORPUS / "cases" / relative)
    assert case.split == "tune"  # unit tests read tune cases only
    return [(f.link, f.signature) for f in triage_text(case.excerpt).findings]


def tune_healthy() -> list:
    return [c for c in load_cases() if c.healthy and c.split == "tune"]


# ---- the loss at ln(k) -------------------------------------------------------------------

def test_a_binary_loss_hovering_at_ln2_is_chance_level():
    """snorkel #870: per-batch BCE between 0.67 and 0.95, median 0.706, for 22 batches: ln 2,
    a 50/50 guess. Not one value repeats, so only the chance level says the model is stuck."""
    assert findings("convergence/bce_loss_hovers_ln2_bilstm_snorkel_870.log")[0] == (
        "convergence#flat-loss", "loss-chance")


def test_a_plateau_at_ln10_names_the_uniform_guess():
    """A loss that stays at 2.302 is the plateau's finding; its summary names ln 10."""
    case = read_case(CORPUS / "cases" / "convergence/loss_flat_at_ln10_example_not_learning_"
                     "sianet_3.log")
    top = triage_text(case.excerpt).findings[0]
    assert top.link == "convergence#flat-loss" and "ln 10" in top.summary


def _series(values: list[float], first: int = 1) -> list[tuple[int, float]]:
    return [(first + i, v) for i, v in enumerate(values)]


def test_a_loss_falling_through_ln10_is_not_chance_level():
    """A healthy classifier starts near ln k and falls through it: the late readings go on
    falling, so they are no floor."""
    falling = [2.6, 2.5, 2.45, 2.4, 2.37, 2.34, 2.32, 2.31, 2.30, 2.29, 2.28, 2.27]
    assert chance(_series(falling, 20)) is None
    assert chance(_series([*falling, 2.1, 1.9, 1.7, 1.5], 20)) is None


def test_the_first_steps_of_a_language_model_sit_at_ln_vocab_and_stay_silent():
    """Every freshly initialised GPT-2 starts at ln 50257 = 10.82: the first ten iterations
    there are the start of a run, not a stuck one."""
    start = [10.95, 10.93, 10.94, 10.92, 10.93, 10.91, 10.92, 10.93, 10.92, 10.91]
    assert chance(_series(start)) is None
    assert chance(_series(start, 300)) is not None  # the same numbers 300 steps in are stuck


def test_a_noisy_loss_that_dips_below_ln2_is_learning():
    """A fine-tuning loss wandering around 0.69 that goes well below it has learnt something
    (a chance-level loss has a floor at ln k)."""
    noisy = [0.82, 0.75, 0.71, 0.69, 0.72, 0.61, 0.70, 0.74, 0.58, 0.69, 0.71, 0.66]
    assert chance(_series(noisy, 100)) is None


def test_chance_levels_are_the_logs_of_class_counts():
    found = chance(_series([2.30256] * 10, 5))
    assert found is not None and found["classes"] == 10
    assert math.isclose(found["chance"], math.log(10))


def test_no_tune_healthy_log_is_called_chance_level():
    """The healthy logs of the tune split (real training with a falling loss) stay silent."""
    for case in tune_healthy():
        sigs = {f.signature for f in triage_text(case.excerpt).findings}
        assert "loss-chance" not in sigs, case.name
