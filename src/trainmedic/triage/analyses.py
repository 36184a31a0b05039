"""Findings that come from analysing the whole log rather than from one message.

A tree declares such a finding like any signature, with `derive: NAME` instead of needles; the
names are the analyses below. Some conclude more than the finding (an *outcome*, e.g. a NaN is
`sudden`), which the signature's `routes` can send to a more precise node.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trainmedic.triage.loss.model import LossAnalysis

# the loss package's detectors (one finding per event kind, see ranking._run_findings)
LOSS_ANALYSES = ("loss-spike", "loss-nan", "grad-norm-explosion", "loss-scale-collapse",
                 "overflow-burst", "loss-divergence", "step-time-regression")
# rank-comparison verdict kind -> analysis name
RANK_ANALYSES = {"mismatch": "rank-mismatch", "behind": "rank-behind", "silent": "rank-silent"}
# analyses of the whole log once it is read
WHOLE_LOG = ("loss-plateau", "loss-chance", "loss-zero", "step-time-creep", "data-wait", "lr-zero",
             "ib-expected-missing", "world-rank-duplicated", "world-partial")
LR_ZERO_MIN = 3  # progress lines in a row printing the learning rate as 0 (one is a schedule's
# first warm-up step or its last step)
# what an analysis can conclude, for its signature's routes (`outcome:`)
OUTCOMES: dict[str, frozenset[str]] = {
    "loss-nan": frozenset({"sudden", "runaway", "exploded"}),
    "loss-plateau": frozenset({"identical"}),
    "lr-zero": frozenset({"grad-zero"}), "loss-spike": frozenset({"recovered"}),
}

ANALYSES = frozenset(LOSS_ANALYSES) | frozenset(RANK_ANALYSES.values()) | frozenset(WHOLE_LOG)


# frameworks whose progress lines count the run's steps from 1 (a resumed run goes on counting)
FIRST_STEP_IS_ONE = frozenset({"verl"})
NAN_FIRST_STEPS = 2  # a NaN at step 1 or 2 of such a run: at most one update came before it
RUNAWAY_RATIO = 10.0  # the loss's size before a NaN, against its first logged size
EARLY_STEP, EARLY_EPOCH = 10, 0.01  # a first logged point this early is the start of the run


def loss_outcome(name: str, loss: LossAnalysis) -> str | None:
    """What a loss analysis concludes beyond its finding, answering the tree's question "what
    did the grad norm and the loss scale do before the NaN?" only where the log can:
    - `sudden`: steps with a finite loss came before it, the grad norm was logged and neither
      exploded nor went NaN first, the fp16 scale held; or the NaN came at the first or second
      logged step of the run and stayed (nothing had time to grow): the tree then asks where
      the NaN was born;
    - `runaway`: the grad norm is not logged, but the loss itself ran away before the NaN (its
      size grew tenfold, rising at each of the last points): what exploding updates look like;
    - `exploded`: the logged grad norm exploded (far above its own history) at one of the last
      finite readings before the NaN: the tree's "jumped by 10x or more right before the NaN";
    - None: the log does not print the grad norm, so the question stays open.
    For a loss spike: `recovered` when one logged point stood out and the next was back at the
    level (one bad step the run shrugged off: nothing to roll back, the tree's question is what
    caused it); a spike over several points keeps the roll-back."""
    if name == "loss-spike":
        sp = loss.spikes[0] if loss.spikes else None
        return "recovered" if sp is not None and sp.recovered and sp.last_bad in (
            None, sp.start) else None
    if name != "loss-nan":
        return None
    nan_seen = loss.nan_count or loss.missing_loss_steps or loss.grad_norm_nan_count
    if nan_seen and _at_first_steps(loss):
        return "sudden"
    if nan_seen and loss.grad_exploded_before_nan and not loss.loss_scale_collapsed:
        return "exploded"
    if not nan_seen or loss.count < 2 or loss.grad_explosions or loss.loss_scale_collapsed:
        return None
    stays = (loss.last_loss is not None and loss.last_loss != loss.last_loss) or (
        loss.grad_norm_nan_count >= 2 and not loss.grad_finite)  # the grad norm never finite
    # the excerpt starts with the run (a step or HF epoch near 0), not somewhere in its middle
    at_start = (loss.first_epoch is not None and loss.first_epoch <= EARLY_EPOCH) or (
        loss.first_epoch is None and loss.first_step is not None and loss.first_step <= EARLY_STEP)
    if loss.finite_before_nan is not None and loss.finite_before_nan <= 1 and stays and at_start:
        return "sudden"
    if loss.grad_norm_nan_count:
        return None  # the grad norm went NaN on its way: the question stays open
    if loss.grad_finite >= 2:
        return "sudden"
    if loss.nan_runs and _ran_away([v for s, v in loss.points if s < loss.nan_runs[0].start]):
        return "runaway"
    return None


def _at_first_steps(loss: LossAnalysis) -> bool:
    """The log's own step counter puts the first NaN at the run's first or second update, where
    nothing had time to grow (the tree: "NaN from the very first iteration"). Only where that
    counter is the run's global step from 1: verl's (its trainer starts `global_steps` at 1 and
    prints it on every step line), so one pasted line is enough and no history is assumed."""
    return (loss.framework in FIRST_STEP_IS_ONE and bool(loss.nan_runs)
            and loss.nan_runs[0].start <= NAN_FIRST_STEPS and not loss.grad_explosions)


def _ran_away(values: list[float]) -> bool:
    sizes = [abs(v) for v in values if v == v]
    if len(sizes) < 3 or sizes[0] == 0:
        return False
    return sizes[-1] >= RUNAWAY_RATIO * sizes[0] and sizes[-3] < sizes[-2] < sizes[-1]


def whole_log(name: str, scanner: Any) -> tuple[str, str | None, dict[str, Any],
                                                 list[tuple[str, int, str]]] | None:
    """(summary, outcome, details, evidence lines) of a whole-log analysis, or None."""
    from trainmedic.triage.trends import chance, frozen_at_chance, plateau, recurring, repeat

    if name == "loss-plateau":
        for loss, _evidence in scanner.loss.runs:
            found = plateau(loss.points)
            if found is None:
                again = repeat(loss.points)
                if again is not None:
                    return (f"the losses of steps {again['from_step']}-{again['to_step']} repeat "
                            f"exactly those from step {again['earlier_step']} on "
                            f"({again['points']} in a row): the same batches give the same loss, "
                            "so the weights do not change", "identical", again, [])
                pool = recurring(loss.points)
                if pool is not None:
                    return (f"steps {pool['from_step']}-{pool['to_step']}: {pool['points']} "
                            f"losses take only {pool['values']} values, {pool['recurring']} of "
                            f"them coming back exactly at later steps ({pool['back']} times): "
                            "the same batches give the same loss, so the weights do not change",
                            "identical", pool, [])
                continue
            if not found["identical"]:
                how = f"from step {found['from_step']} to {found['to_step']}"
            elif found["same_from"] == found["from_step"]:
                how = "never moved from the first logged step"
            else:
                how = f"exactly the same from step {found['same_from']} on"
            at = chance(loss.points)
            classes = at["classes"] if at is not None else frozen_at_chance(found["value"])
            why = (f"ln {classes} = {math.log(classes):.4g}, the loss of a uniform guess over "
                   f"{classes} classes" if classes is not None else "")
            # the same loss on different batches at ln(k): the output ignores the input, which
            # says nothing of whether the weights change (the flat-loss question stays)
            identical = found["identical"] and (
                at is None and frozen_at_chance(found["value"]) is None)
            return (f"the loss stays at {found['value']:.6g} ({found['points']} logged "
                    f"points, {how}{'; ' + why if why else ''}): the model is not learning",
                    "identical" if identical else None, found, [])
        return None
    if name == "loss-chance":
        for loss, _evidence in scanner.loss.runs:
            at = chance(loss.points)
            if at is None or plateau(loss.points) is not None or repeat(
                    loss.points) is not None or recurring(loss.points) is not None:
                continue  # a plateau's finding already says it (and names ln k)
            return (f"the loss stays around {at['value']:.4g} from step {at['from_step']} to "
                    f"{at['to_step']} ({at['points']} readings, none clearly below it): ln "
                    f"{at['classes']} = {at['chance']:.4g}, the loss of a uniform guess over "
                    f"{at['classes']} classes - the model predicts no better than chance",
                    None, at, [])
        return None
    if name == "ib-expected-missing":
        lines = scanner.ib.missing()
        if lines is None:
            return None
        return ("NCCL was told to use InfiniBand (an HCA list or IB enabled) but found no IB "
                "device, and no rank uses IB: traffic between nodes goes over TCP sockets",
                None, {}, lines)
    if name == "world-rank-duplicated":
        dup = scanner.world.duplicated()
        if dup is None:
            return None
        ranks, lines = dup
        return (f"global rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks[:8]))} "
                f"{'were' if len(ranks) > 1 else 'was'} announced by more than one process and "
                "the process group never formed: two nodes (or tasks) took the same ranks",
                None, {"ranks": ranks}, lines)
    if name == "world-partial":
        part = scanner.world.partial()
        if part is None or any(loss.count for loss, _evidence in scanner.loss.runs):
            return None
        seen, world, lines = part
        return (f"only {seen} of {world} processes announced themselves and rank 0 never saw "
                "the world complete: the others (often a whole node) never joined", None,
                {"members": seen, "world": world}, lines)
    if name == "loss-zero":
        from trainmedic.triage.loss_zero import zero_tail

        for loss, _evidence in scanner.loss.runs:
            z = zero_tail(loss.points, framework=loss.framework, nan_seen=bool(
                loss.nan_count or loss.grad_norm_nan_count or loss.missing_loss_steps))
            if z is not None:
                return (f"the loss drops from {z['before']:.4g} to exactly 0.0 at step "
                        f"{z['from_step']} and stays there ({z['zeros']} reading(s)): no token "
                        "carries loss any more (the loss mask or template leaves nothing)",
                        None, z, [])
        return None
    if name == "lr-zero":
        for loss, _evidence in scanner.loss.runs:
            if loss.lr_zero_tail < LR_ZERO_MIN and loss.lr_zero_run >= LR_ZERO_MIN and not (
                    loss.overflow_events or loss.skipped_iterations or loss.scale_events):
                # zeros the schedule left behind before the rate rose: those optimizer steps
                # changed nothing (https://github.com/QwenLM/Qwen/issues/672: 'learning_rate': 0
                # for five epochs, then 0.0003). Not where an fp16 scaler skipped steps: a
                # skipped step leaves the scheduler where it was, so a warm-up from 0 prints 0
                return (f"the learning rate is printed as 0 on {loss.lr_zero_run} progress lines "
                        "in a row before it rises: the optimizer's steps there changed nothing",
                        None, {"lines": loss.lr_zero_run, "grad_zero": False}, [])
            if loss.lr_zero_tail < LR_ZERO_MIN:
                continue
            grad_zero = loss.grad_zero_tail >= LR_ZERO_MIN
            return (f"the learning rate is printed as 0 on the last {loss.lr_zero_tail} progress "
                    "lines" + (" (and the grad norm too)" if grad_zero else "")
                    + ": the optimizer's steps change nothing",
                    "grad-zero" if grad_zero else None,
                    {"lines": loss.lr_zero_tail, "grad_zero": grad_zero}, [])
        return None
    if name == "data-wait":
        wait = scanner.steptimes.data_wait()
        if wait is None:
            return None
        if "stalls" in wait:
            return (f"steps stall for their batch (up to {wait['longest']:.3g} s, {wait['stalls']} "
                    f"stall(s)): the waits take {wait['share']:.0%} of the time read "
                    f"({wait['points']} readings)", None, wait, list(scanner.steptimes.data_lines))
        return (f"iterations spend {wait['share']:.0%} of their time waiting for the next batch "
                f"(median of {wait['points']} data_time/time readings)",
                None, wait, list(scanner.steptimes.data_lines))
    if name == "step-time-creep":
        st = scanner.steptimes
        creep = st.creep()
        if creep is None:
            return None
        lines = [x for x in (st.first, st.last) if x is not None]
        if creep["form"] == "throughput":  # read as seconds per sample
            return (f"the throughput falls through the run: median {1 / creep['early']:.4g} "
                    f"samples/s early, {1 / creep['late']:.4g} late ({creep['ratio']:.2f}x "
                    f"the time per sample, {creep['points']} readings)", None, creep, lines)
        return (f"the step time grows through the run: median {creep['early']:.4g} early, "
                f"{creep['late']:.4g} late ({creep['ratio']:.2f}x, {creep['points']} readings)",
                None, creep, lines)
    return None
