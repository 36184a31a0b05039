"""Findings that come from analysing the whole log rather than from one message.

A tree declares such a finding like any signature, with `derive: NAME` instead of needles; the
names are the analyses below. Each writes its finding's summary from the analysis' numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainmedic.triage.loss_series import LossAnalysis

# loss-series analyses, in the order the scanner checks their counters
LOSS_ANALYSES = ("loss-spike", "loss-nan", "grad-norm-explosion", "loss-scale-collapse")
# rank-comparison verdict kind -> analysis name
RANK_ANALYSES = {"mismatch": "rank-mismatch", "behind": "rank-behind", "silent": "rank-silent"}


def spike_summary(loss: LossAnalysis) -> tuple[str, dict[str, Any]]:
    sp = loss.spikes[0]
    ratio = sp.peak_value / sp.baseline if sp.baseline else float("inf")
    state = f"recovered at {sp.end}" if sp.end is not None else "never recovered"
    more = f"; {len(loss.spikes)} spikes in all" if len(loss.spikes) > 1 else ""
    summary = (f"loss spiked at iteration {sp.start} to {sp.peak_value:.4g} "
               f"({ratio:.1f}x the rolling median {sp.baseline:.4g}), {state}{more}: "
               f"{loss.recovery(sp)}")
    return summary, {"recovery": loss.recovery(sp), "spike": sp.to_dict()}


def nan_summary(loss: LossAnalysis) -> tuple[str, dict[str, Any]]:
    parts = []
    if loss.nan_count:
        first = loss.nan_steps[0] if loss.nan_steps else "?"
        parts.append(f"NaN/inf loss at {loss.nan_count} logged steps (first {first})")
    if loss.missing_loss_steps:
        parts.append(f"{loss.missing_loss_steps} Megatron iteration lines lost their loss field "
                     "(Megatron omits a NaN average)")
    if loss.grad_norm_nan_count:
        parts.append(f"grad norm NaN/inf at {loss.grad_norm_nan_count} steps")
        if loss.last_loss == 0.0:
            parts.append("loss logged as 0.0 with a NaN grad norm: the weights are already NaN "
                         "(HF Trainer's logging_nan_inf_filter hides the NaN loss)")
    if loss.nan_iterations:
        parts.append(f"Megatron counted {loss.nan_iterations} nan iterations")
    return "; ".join(parts) or "the loss became NaN/inf", {}


def grad_summary(loss: LossAnalysis) -> tuple[str, dict[str, Any]]:
    step, g, base = loss.grad_explosions[0]
    if not base:
        return "", {}
    return (f"gradient norm {g:g} at step {step}, {g / base:.0f}x its rolling median {base:g} "
            f"({len(loss.grad_explosions)} such steps)"), {}


def scale_summary(loss: LossAnalysis) -> tuple[str, dict[str, Any]]:
    return (f"fp16 loss scale fell from {loss.loss_scale_max:g} to {loss.loss_scale_min:g}: "
            "gradients keep overflowing"), {}


LOSS_SUMMARIES: dict[str, Callable[[LossAnalysis], tuple[str, dict[str, Any]]]] = {
    "loss-spike": spike_summary, "loss-nan": nan_summary,
    "grad-norm-explosion": grad_summary, "loss-scale-collapse": scale_summary,
}
# analyses whose findings are about the series, not about the ranks that printed it
UNRANKED = frozenset({"loss-spike", "loss-nan"})

# analyses of the whole log once it is read
WHOLE_LOG = ("loss-plateau", "step-time-creep")
# what an analysis can conclude, for its signature's routes (`outcome:`)
OUTCOMES: dict[str, frozenset[str]] = {
    "loss-nan": frozenset({"sudden"}), "loss-plateau": frozenset({"identical"}),
}

ANALYSES = frozenset(LOSS_ANALYSES) | frozenset(RANK_ANALYSES.values()) | frozenset(WHOLE_LOG)


def loss_outcome(name: str, loss: LossAnalysis) -> str | None:
    """What a loss analysis concludes beyond its finding: a NaN is `sudden` when steps with a
    finite loss came before it and the gradient norm neither exploded nor went NaN first (the
    tree then asks where the NaN was born, not what drove it up)."""
    if name != "loss-nan":
        return None
    nan_seen = loss.nan_count or loss.missing_loss_steps
    if nan_seen and loss.count >= 2 and not loss.grad_explosions \
            and not loss.grad_norm_nan_count and not loss.loss_scale_collapsed:
        return "sudden"
    return None

def whole_log(name: str, scanner: Any) -> tuple[str, str | None, dict[str, Any],
                                                 list[tuple[str, int, str]]] | None:
    """(summary, outcome, details, evidence lines) of a whole-log analysis, or None."""
    from trainmedic.triage.trends import plateau

    if name == "loss-plateau":
        loss = scanner.loss.analysis
        found = plateau(loss.points)
        if found is None:
            return None
        how = ("never moved from the first logged step" if found["identical"] else
               f"from step {found['from_step']} to {found['to_step']}")
        return (f"the loss stays at {found['value']:.6g} ({found['points']} logged points, "
                f"{how}): the model is not learning", "identical" if found["identical"] else
                None, found, [])
    if name == "step-time-creep":
        st = scanner.steptimes
        found = st.creep()
        if found is None:
            return None
        lines = [x for x in (st.first, st.last) if x is not None]
        return (f"the step time grows through the run: median {found['early']:.4g} early, "
                f"{found['late']:.4g} late ({found['ratio']:.2f}x, {found['points']} readings)",
                None, found, lines)
    return None
