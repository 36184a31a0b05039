"""Generated training logs in real line formats (the planted events are the test's truth).

Line templates, each from the code that prints it:
- Megatron-LM `training_log` (core 0.16+: microsecond timestamp), as in
  tests/fixtures/loss/megatron_lm_moe_timestamped.log; a line averages the losses of the
  non-skipped iterations of its `--log-interval` and prints the loss only when that average is
  > 0; NaN iterations are skipped and counted (`number of nan iterations`);
- Megatron-DeepSpeed (BigScience), as in tests/fixtures/tui/megatron_lm_loss_spike.log;
- HF Trainer stdout: `str(logs)` of `ProgressCallback.on_log` (4.x floats, 5.x `f"{v:.4g}"`
  strings) followed by the tqdm bar redrawn at the global step.
"""

from __future__ import annotations

import math
import random


def decline(n: int, seed: int = 0, *, noise: float = 0.02, floor: float = 2.0) -> list[float]:
    """A normal run: fast early decline, then a slow one, with multiplicative noise."""
    rnd = random.Random(seed)
    return [(floor + 8.0 * math.exp(-i / 300)) * (1 + rnd.gauss(0, noise)) for i in range(n)]


def megatron_log(values: list[float], *, interval: int = 1, grads: list[float] | None = None,
                 scales: list[float] | None = None, skipped: set[int] | frozenset = frozenset(),
                 times: list[float] | None = None, saves_every: int = 0,
                 fmt: str = "lm", save_dir: str = "/lustre/ckpt/gpt") -> str:
    """Megatron lines for per-iteration `values` (iteration i = values[i-1]); NaN = skipped."""
    lines = []
    if saves_every:
        lines.append(f"    save_interval ................................... {saves_every}")
    n = len(values)
    for end in range(interval, n + 1, interval):
        its = range(end - interval + 1, end + 1)
        good = [values[i - 1] for i in its if i not in skipped and math.isfinite(values[i - 1])]
        nan = sum(1 for i in its if not math.isfinite(values[i - 1]))
        skip = sum(1 for i in its if i in skipped or not math.isfinite(values[i - 1]))
        avg = sum(good) / len(good) if good else 0.0
        grad = grads[end - 1] if grads else 0.8
        scale = scales[end - 1] if scales else 1.0
        t = times[end - 1] if times else 4247.9
        loss = f" lm loss: {avg:.6E} |" if avg > 0 else ""
        if fmt == "lm":
            lines.append(
                f" [2024-05-01 12:00:00.123456] iteration {end:8d}/  100000 | consumed samples: "
                f"{end * 512:12d} | elapsed time per iteration (ms): {t:.1f} | throughput per "
                f"GPU (TFLOP/s/GPU): 401.2 | learning rate: 2.999000E-04 | global batch size:   "
                f"512 |{loss} loss scale: {scale:.1f} | grad norm: {grad:.3f} | number of "
                f"skipped iterations: {skip:3d} | number of nan iterations: {nan:3d} |")
        else:  # BigScience Megatron-DeepSpeed
            lines.append(
                f" iteration {end:8d}/  311541 | consumed samples: {end * 1024:12d} | elapsed "
                f"time per iteration (ms): {t:.1f} | learning rate: 9.850E-05 | global batch "
                f"size:  1024 |{loss} loss scale: {scale:.1f} | grad norm: {grad:.3f} | num "
                f"zeros: 0.0 | number of skipped iterations: {skip:3d} | number of nan "
                f"iterations: {nan:3d} |")
        if saves_every and end % saves_every == 0:
            lines.append(f"  successfully saved checkpoint from iteration {end:7d} to {save_dir} "
                         "[ t 1/1, p 1/1 ]")
    return "\n".join(lines) + "\n"


def hf_log(values: list[float], *, logging_steps: int = 10, grads: list[float] | None = None,
           v5: bool = False, total: int | None = None, saves_every: int = 0) -> str:
    """HF Trainer stdout: a dict every `logging_steps` (the mean loss), then the bar."""
    total = total or len(values)
    out = []
    for step in range(logging_steps, len(values) + 1, logging_steps):
        window = values[step - logging_steps:step]
        loss = round(sum(window) / len(window), 4)
        grad = grads[step - 1] if grads else 1.2
        lr, epoch = 1e-05, round(step / total, 2)
        if v5:
            d = {"loss": f"{loss:.4g}", "grad_norm": f"{grad:.4g}", "learning_rate": f"{lr:.4g}",
                 "epoch": f"{epoch:.4g}"}
        else:
            d = {"loss": loss, "grad_norm": grad, "learning_rate": lr, "epoch": epoch}
        pct = int(100 * step / total)
        out.append(str(d))
        out.append(f" {pct:2d}%|####      | {step}/{total} [01:00<02:00,  2.00it/s]")
        if saves_every and step % saves_every == 0:
            out.append(f"[INFO|trainer.py:3984] 2025-01-01 00:00:00,000 >> Saving model "
                       f"checkpoint to out/checkpoint-{step}")
    return "\n".join(out) + "\n"
