"""The command-line flags a recovery may use, per framework, as upstream's argparse declares them.

One small function on purpose: when the shipped argparse lists of the knowledge-lint work are
on main, `flag_set` reads them instead and the recovery tests stay as they are.

Checked against upstream source (search look-ups, not copied):
- NVIDIA Megatron-LM `megatron/training/arguments.py`: `--load` (str), `--ckpt-step` (int,
  "Checkpoint step to load model from"), `--iterations-to-skip` (nargs='+', type=int),
  `--bf16`/`--fp16` (store_true), `--initial-loss-scale`, `--min-loss-scale`,
  `--loss-scale-window` (float), `--hysteresis` (int); the parser uses allow_abbrev=False.
- BigScience Megatron-DeepSpeed `megatron/arguments.py`: `--load` (str),
  `--skip-train-iteration-range` (type=str, nargs='+', "one or more dash-separated ranges"),
  the same mixed-precision flags; no `--ckpt-step`, no `--iterations-to-skip`.
"""

from __future__ import annotations

import argparse

_MIXED = {"--bf16": "flag", "--fp16": "flag", "--initial-loss-scale": float,
          "--min-loss-scale": float, "--loss-scale-window": float, "--hysteresis": int}


def flag_set(framework: str) -> dict[str, object]:
    """flag -> "flag" (store_true), a type (one value) or ("+", type) (one or more)."""
    if framework == "megatron-lm":
        return {"--load": str, "--ckpt-step": int, "--iterations-to-skip": ("+", int), **_MIXED}
    if framework == "megatron-deepspeed":
        return {"--load": str, "--skip-train-iteration-range": ("+", str), **_MIXED}
    raise KeyError(framework)


def parser_for(framework: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
    for flag, kind in flag_set(framework).items():
        if kind == "flag":
            parser.add_argument(flag, action="store_true")
        elif isinstance(kind, tuple):
            parser.add_argument(flag, nargs=kind[0], type=kind[1])
        else:
            parser.add_argument(flag, type=kind)
    return parser
