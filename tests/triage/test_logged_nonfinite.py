"""tensorboardX's "NaN or Inf found in input tensor" says a logged scalar was not finite. Next
to an fp16 scaler's start-up search (a few skipped steps, then finite ones) it is that search;
alone, more often than the skips, or with a collapsing scale, it is a NaN to chase.

The healthy log is batch 11's UNITER#28 case: it was a false alarm in that batch's blind run
(recorded in the floor test) and is read here by path, as the one holdout case a rule was made
from. The lines marked "constructed" are written for the test in the shape of the real ones.
"""

from __future__ import annotations

from .routed import links, top
from .test_never_silent import CASES, excerpt, read_case

WARNING = "[1,0]<stdout>:Warning: NaN or Inf found in input tensor."
SKIP = ("[1,0]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to "
        "32768.0")


def test_the_scalers_start_up_search_with_its_logged_inf_is_no_finding() -> None:
    case = read_case(CASES / "healthy" /
                     "c11_uniter_horovod_fp16_early_overflow_then_steps_uniter_28.log")
    assert case.expect == "none"
    assert links(case.excerpt) == []


def test_a_logged_nan_without_overflow_skips_is_a_nan_finding() -> None:
    # constructed: the warning on a run with no fp16 scaler
    assert top(f"step 100 loss 2.31\n{WARNING}\nstep 101 loss nan\n") == "loss-spike#nan-loss"


def test_more_logged_nans_than_skipped_steps_is_a_nan_finding() -> None:
    # constructed: one skip, three non-finite scalars
    assert top(f"{SKIP}\n{WARNING}\n{WARNING}\n{WARNING}\n") == "loss-spike#nan-loss"


def test_logged_nans_next_to_a_collapsing_scale_stay_with_the_collapse() -> None:
    # apex#493: the scale halves from 256 to 2 with the same warning beside it
    assert top(excerpt("loss-spike/amp_overflow_spike_validation_jump_apex_493.log")) == \
        "loss-spike#loss-scale-collapse"
