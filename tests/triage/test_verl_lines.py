"""verl's step lines (`step:N - key:value - ...`) read as a loss series, on real lines from
public verl threads (tests/fixtures/loss/verl_*.log, source URL on each file's line 1)."""

from __future__ import annotations

import math
import re
from pathlib import Path

from trainmedic.triage import triage_text
from trainmedic.triage.loss import LossTracker
from trainmedic.triage.loss.verl import read_line

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "loss"


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()[1:]


def healthy_line() -> str:
    """verl #1208's one printed step line, which the thread wrapped in two: joined back."""
    return "".join(lines("verl_sglang_step2_healthy_1208.log")[:2])


def analyse(text_lines: list[str]):
    tracker = LossTracker()
    tracker.begin("x.log")
    for i, text in enumerate(text_lines, 1):
        tracker.feed(text, i)
    return tracker.finish(), tracker


def test_a_healthy_step_line_gives_its_step_loss_grad_norm_and_step_time():
    point = read_line(healthy_line())
    assert point is not None
    assert (point.step, point.loss, point.grad) == (2, 0.001, 0.069)  # actor/pg_loss, grad_norm
    assert point.time_ms is not None and math.isclose(point.time_ms, 96551.0)


def test_the_learning_rate_printed_as_0_000_is_not_read():
    """`actor/lr:0.000` is a rate of 1e-6 printed with three decimals, not a rate of 0."""
    first = lines("verl_sglang_step2_healthy_1208.log")[0]
    assert "actor/lr:0.000" in first
    analysis, _ = analyse([re.sub(r"step:\d+ ", f"step:{n} ", first) for n in range(1, 11)])
    assert analysis.lr_zero_tail == 0
    assert analysis.count == 10 and analysis.framework == "verl"


def test_one_pasted_line_is_one_point_without_invented_history():
    analysis, _ = analyse(lines("verl_step2_actor_grad_norm_nan_1037.log"))
    assert analysis.count == 1 and len(analysis.points) == 1
    assert analysis.finite_before_nan == 0
    assert [(r.start, r.what) for r in analysis.nan_runs] == [(2, "grad norm")]


def test_a_nan_in_the_critic_loss_is_a_nan_point_though_the_actor_is_finite():
    analysis, _ = analyse(lines("verl_ppo_step1_vf_loss_nan_498.log"))
    assert [(r.start, r.what) for r in analysis.nan_runs] == [(1, "loss")]
    assert analysis.grad_norm_nan_count == 1  # critic/grad_norm:nan (the actor's is 9.819)


def test_a_nan_at_verls_first_steps_asks_where_it_was_born():
    """verl counts its steps from 1: a NaN at step 1 or 2 came before anything could grow (the
    tree: "NaN from the very first iteration")."""
    for name in ("verl_ppo_step1_vf_loss_nan_498.log", "verl_step2_actor_grad_norm_nan_1037.log"):
        findings = triage_text("\n".join(lines(name))).findings
        assert findings[0].link == "loss-spike#nan-source", name


def test_a_nan_later_in_a_run_leaves_the_question_open():
    """The same line at step 34: what came before is not in the excerpt."""
    text = "\n".join(lines("verl_step2_actor_grad_norm_nan_1037.log"))
    text = re.sub(r"step:2 ", "step:34 ", text)
    findings = triage_text(text).findings
    assert findings and findings[0].link == "loss-spike#nan-loss"


def test_a_policy_loss_that_changes_sign_is_no_spike():
    """An RL policy loss sits near zero and flips sign: it is drawn, never tested for spikes."""
    line = healthy_line()
    values = [0.001, -0.002, 0.0015, -0.001] * 10 + [0.35, -0.02]
    text = [re.sub(r"actor/pg_loss:[-\d.]+", f"actor/pg_loss:{v}",
                   re.sub(r"step:\d+ ", f"step:{n} ", line)) for n, v in enumerate(values, 1)]
    analysis, _ = analyse(text)
    assert analysis.count == len(values)
    assert analysis.spikes == [] and analysis.divergence is None


def test_a_steady_rise_of_timing_s_step_is_a_step_time_regression():
    line = healthy_line()
    text = [re.sub(r"timing_s/step:[\d.]+", f"timing_s/step:{96.5 * (1 + n / 40):.3f}",
                   re.sub(r"step:\d+ ", f"step:{n} ", line)) for n in range(1, 81)]
    analysis, _ = analyse(text)
    assert analysis.step_time is not None and analysis.step_time.kind == "step-time"


def test_lines_that_only_look_alike_are_not_verl_step_lines():
    wrapped_tail = lines("verl_sglang_step2_healthy_1208.log")[1]
    assert "timing_s/step:96.551 - " in wrapped_tail and read_line(wrapped_tail) is None
    titan = (FIXTURES / "torchtitan_steps.log").read_text(encoding="utf-8").splitlines()[1]
    assert read_line(titan) is None
    analysis, _ = analyse([titan])
    assert analysis.framework == "torchtitan"


def test_a_long_verl_line_is_read_in_linear_time(fed_in_linear_time):
    head = lines("verl_sglang_step2_healthy_1208.log")[0]
    fed_in_linear_time(lambda repeats: head + " - actor/pg_loss:0.001 - actor/grad_norm:nan"
                       * repeats)


def sft_line(step: int, loss: float) -> str:
    """A line of verl's SFT trainer: the same logger, its step metrics are `train/loss`,
    `train/lr(1e-3)` (the rate scaled by 1e3) and `train/time(s)` (keys as in verl's
    fsdp_sft_trainer; no SFT line is in the corpus yet)."""
    return f"step:{step} - train/loss:{loss} - train/lr(1e-3):0.001 - train/time(s):1.5"


def test_the_sft_trainers_loss_is_a_supervised_loss_tested_for_spikes():
    point = read_line(sft_line(7, 1.25))
    assert point is not None and point.spikes and point.loss == 1.25
    assert point.time_ms == 1500.0
    losses = [2.0 - 0.01 * n + 0.005 * (n % 3) for n in range(1, 41)] + [6.0, 1.6]
    analysis, _ = analyse([sft_line(n, v) for n, v in enumerate(losses, 1)])
    assert [s.start for s in analysis.spikes] == [41]
    assert analysis.lr_zero_tail == 0
