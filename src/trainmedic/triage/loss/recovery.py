"""The way back, in the framework that wrote the log (never another framework's flags).

Flags, each checked against the framework's own source:
- NVIDIA Megatron-LM: `--load DIR --ckpt-step N` (megatron/training/arguments.py) and
  `--iterations-to-skip I [I ...]` (core 0.12+, single iterations). The train loop tests the
  count of finished iterations (`if iteration in args.iterations_to_skip`) in the releases we
  read, while the newest compare `iteration + 1`, i.e. the number the log prints. Listing the
  bad range from one before its start skips the bad iterations under both (and one batch more).
- Megatron-DeepSpeed (BigScience / Microsoft forks): `--skip-train-iteration-range A-B [C-D ...]`
  (dash-separated, inclusive, numbered as the log prints them) and `--load DIR`; the iteration
  loaded is the checkpoint folder's `latest` tag.
- Hugging Face Trainer: `trainer.train(resume_from_checkpoint=...)`; no option skips a range
  of steps. DeepSpeed: `engine.load_checkpoint(dir, tag=...)`; no data skipping.
  Lightning: `trainer.fit(model, ckpt_path=...)`; a `training_step` that returns None skips the
  batch. torchtitan: `--checkpoint.load_step N`.
The checkpoint named is always one the log says was saved.
"""

from __future__ import annotations

from trainmedic.triage.loss.model import LossAnalysis, Recovery, Spike

SEQ_INLINE = 8  # list up to this many iterations literally, else $(seq A B)


def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, with overlapping or touching ranges joined."""
    out: list[tuple[int, int]] = []
    for a, b in sorted((min(r), max(r)) for r in ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def megatron_lm_skip_values(ranges: list[tuple[int, int]]) -> str:
    """`--iterations-to-skip` values for logged ranges (one earlier: see the module doc)."""
    parts = []
    for a, b in merge_ranges([(max(1, a - 1), b) for a, b in ranges]):
        if b - a + 1 <= SEQ_INLINE:
            parts.append(" ".join(str(i) for i in range(a, b + 1)))
        else:
            parts.append(f"$(seq {a} {b})")
    return " ".join(parts)


def _ckpt_dir(a: LossAnalysis, step: int | None) -> str:
    if step is not None and step in a.save_paths:
        return a.save_paths[step]
    return "$CKPT_DIR"


def _scaler_fault(a: LossAnalysis, at: int | None = None) -> bool:
    """The loss went up (or NaN) while the fp16 scale collapsed or kept overflowing."""
    if not a.scale_events:
        return False
    first = min(e.start for e in a.scale_events)
    if at is None:
        return a.divergence is not None or any(s.end is None for s in a.spikes) or bool(
            a.nan_runs) or a.loss_scale_collapsed
    # a rise that starts after the scale began to fall, or within a short while before it
    slack = max(50, 10 * a.log_interval)
    return at >= first - slack


def fix_scaler(a: LossAnalysis) -> Recovery:
    fw = a.framework or "unknown"
    first = min(e.start for e in a.scale_events)
    ckpt = a.checkpoint_before(first)
    where = (f"resume from the checkpoint of step {ckpt} (saved before the scale began to "
             f"fall at {first}) " if ckpt is not None else
             f"no checkpoint saved before step {first} appears in this log; resume from the "
             "last one written before it ")
    text = ("the loss rose while the fp16 loss scale fell: a loss-scaler fault, not bad data, "
            "so skipping data would not help; " + where + "with bf16 instead of fp16, or with "
            "a scaler that backs off less")
    notes = []
    if fw.startswith("megatron") or fw == "gpt-neox":
        cmd = "--bf16"
        if ckpt is not None and fw in ("megatron-lm", "megatron-deepspeed"):
            step = f" --ckpt-step {ckpt}" if fw == "megatron-lm" else ""
            cmd = f"--load {_ckpt_dir(a, ckpt)}{step} --bf16"
        notes.append("--bf16 replaces --fp16; on GPUs without bf16 keep --fp16 with a calmer "
                     "scaler: --initial-loss-scale 65536 --min-loss-scale 1 "
                     "--loss-scale-window 1000 --hysteresis 2")
    elif fw in ("deepspeed", "hf-trainer"):
        cmd = ('DeepSpeed config: {"bf16": {"enabled": true}, "fp16": {"enabled": false}}'
               if fw == "deepspeed" else "TrainingArguments(bf16=True, fp16=False)")
    elif fw in ("lightning", "nemo"):
        cmd = 'Trainer(precision="bf16-mixed")'
    else:
        cmd = None
    notes.append("see loss-spike#loss-scale-collapse")
    return Recovery(framework=fw, action="fix-scaler", text=text, command=cmd, checkpoint=ckpt,
                    checkpoint_path=a.save_paths.get(ckpt) if ckpt is not None else None,
                    notes=notes)


def skip_data(a: LossAnalysis, ranges: list[tuple[int, int]], *, recovered: bool = True,
              ) -> Recovery:
    """Roll back to the last saved checkpoint before the first range and skip the ranges."""
    fw = a.framework or "unknown"
    ranges = merge_ranges(ranges)
    first = ranges[0][0]
    ckpt = a.checkpoint_before(first)
    path = a.save_paths.get(ckpt) if ckpt is not None else None
    span = ", ".join(f"{x}-{y}" if x != y else str(x) for x, y in ranges)
    back = (f"resume from the checkpoint of step {ckpt} (saved, the last one before {first})"
            if ckpt is not None else
            f"no checkpoint saved before step {first} appears in this log: resume from the "
            "last one written before it")
    text = f"{back} and skip the data of steps {span}"
    if not recovered:
        text += " (the loss never came back: if it spikes again at the same place, widen the range)"
    notes: list[str] = []
    cmd: str | None = None
    d = _ckpt_dir(a, ckpt)
    mds = "--skip-train-iteration-range " + " ".join(f"{x}-{y}" for x, y in ranges)
    mlm = "--iterations-to-skip " + megatron_lm_skip_values(ranges)
    if fw == "megatron-lm":
        cmd = (f"--load {d} --ckpt-step {ckpt} " if ckpt is not None else "") + mlm
        notes.append("--iterations-to-skip starts one iteration early so the range is skipped "
                     "whether the release counts iterations before or after the step "
                     "(core 0.12+)")
    elif fw == "megatron-deepspeed":
        cmd = f"--load {d} {mds}"
        if ckpt is not None:
            notes.append(f"make {ckpt} the iteration loaded: the `latest` file in {d} names "
                         f"the tag (global_step{ckpt})")
    elif fw in ("megatron", "gpt-neox"):
        if fw == "megatron":
            text += ("; the log does not say which Megatron wrote it: NVIDIA Megatron-LM (core "
                     f"0.12+) takes `{mlm}`, the Megatron-DeepSpeed forks take `{mds}`")
        else:
            notes.append("trainmedic knows no GPT-NeoX option it has verified to skip "
                         "iterations: drop the samples of those steps from the data")
        cmd = None
    elif fw == "hf-trainer":
        target = path or f"OUTPUT_DIR/checkpoint-{ckpt}"
        cmd = (f'trainer.train(resume_from_checkpoint="{target}")' if ckpt is not None else None)
        notes.append("the HF Trainer has no option to skip a range of steps: on resume it "
                     "replays the data order, so drop the offending examples or set another "
                     "data_seed")
    elif fw == "deepspeed":
        cmd = (f'engine.load_checkpoint("{d}", tag="global_step{ckpt}")'
               if ckpt is not None else None)
        notes.append("DeepSpeed does not skip data itself: advance your data iterator past "
                     f"steps {span} before training on")
    elif fw in ("lightning", "nemo"):
        cmd = f'trainer.fit(model, ckpt_path="{path or "PATH/TO.ckpt"}")'
        notes.append(f"Lightning has no skip option: return None from training_step for the "
                     f"batches of steps {span} (automatic optimization then skips them)")
    elif fw == "torchtitan":
        cmd = f"--checkpoint.load_step {ckpt}" if ckpt is not None else None
        notes.append("torchtitan does not skip data itself: skip those batches in the "
                     "data loader")
    return Recovery(framework=fw, action="skip-data", text=text, command=cmd, checkpoint=ckpt,
                    checkpoint_path=path, skip=ranges, notes=notes)


def spike_range(s: Spike) -> tuple[int, int]:
    first = s.first_bad or s.start
    if s.end is None:
        return first, s.start  # never recovered: the data the first bad point covered
    return first, max(s.last_bad or s.start, s.start)


def for_spike(a: LossAnalysis, s: Spike) -> Recovery:
    if _scaler_fault(a, s.start):
        return fix_scaler(a)
    return skip_data(a, [spike_range(s)], recovered=s.end is not None)


def plan(a: LossAnalysis) -> list[Recovery]:
    """Recoveries, most relevant first (stored in `LossAnalysis.recoveries`)."""
    out: list[Recovery] = []
    if a.scale_events and _scaler_fault(a):
        out.append(fix_scaler(a))
    ranges = [spike_range(s) for s in a.spikes if not _scaler_fault(a, s.start)]
    unrecovered = any(s.end is None for s in a.spikes if not _scaler_fault(a, s.start))
    for r in a.nan_runs:
        if not _scaler_fault(a, r.start):
            start = r.start - a.log_interval + 1 if a.log_interval > 1 else r.start
            ranges.append((max(1, start), r.end))
    if ranges:
        # everything after the first rollback point, in one command
        out.append(skip_data(a, ranges, recovered=not unrecovered))
    return out
