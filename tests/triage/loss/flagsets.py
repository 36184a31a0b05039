"""The command-line flags a recovery may use, per framework: the shipped argparse lists.

`flag_set` reads the API reference lists of `trainmedic.trees.apilists` (Megatron-LM's flags
per core version from arguments.py snapshots, Megatron-DeepSpeed's from its arguments.py).
`parser_for` builds an argparse parser with Megatron's own settings (allow_abbrev=False) for
the flags recoveries print, typed as upstream declares them (checked with the search tool):
- Megatron-LM: `--load` (str), `--ckpt-step` (int), `--iterations-to-skip` (nargs='+',
  type=int), `--bf16`/`--fp16` (store_true), `--initial-loss-scale`, `--min-loss-scale`,
  `--loss-scale-window` (float), `--hysteresis` (int);
- Megatron-DeepSpeed (BigScience): `--load`, `--skip-train-iteration-range` (type=str,
  nargs='+', dash-separated ranges), the same mixed-precision flags.
A flag missing from the framework's shipped list fails the parser's construction.
"""

from __future__ import annotations

import argparse

KINDS: dict[str, object] = {
    "--load": str, "--ckpt-step": int, "--iterations-to-skip": ("+", int),
    "--skip-train-iteration-range": ("+", str), "--bf16": "flag", "--fp16": "flag",
    "--initial-loss-scale": float, "--min-loss-scale": float, "--loss-scale-window": float,
    "--hysteresis": int,
}


def flag_set(framework: str) -> frozenset[str]:
    """Every flag the framework's parser accepts, from the shipped lists."""
    from trainmedic.trees import apilists

    if framework == "megatron-lm":
        flags = apilists.megatron()
        return frozenset(flags.flags) | frozenset(flags.facts)
    if framework == "megatron-deepspeed":
        return apilists.megatron_deepspeed()
    raise KeyError(framework)


def parser_for(framework: str) -> argparse.ArgumentParser:
    accepted = flag_set(framework)
    parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
    for flag, kind in KINDS.items():
        if flag not in accepted:
            continue  # not this framework's: an argument using it is unrecognized
        if kind == "flag":
            parser.add_argument(flag, action="store_true")
        elif isinstance(kind, tuple):
            parser.add_argument(flag, nargs=kind[0], type=kind[1])
        else:
            parser.add_argument(flag, type=kind)
    return parser


def parse(framework: str, words: list[str]) -> argparse.Namespace:
    """Parse like the framework does: an unknown flag is an error, not ignored."""
    ns, unknown = parser_for(framework).parse_known_args(words)
    if unknown:
        raise argparse.ArgumentError(None, f"unrecognized arguments: {' '.join(unknown)}")
    return ns
