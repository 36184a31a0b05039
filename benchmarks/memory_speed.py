"""How long `trainmedic memory --json` takes, against a bare Python start.

Budget (issue 17): about the time of a bare Python start (`python -c pass`) plus 50 ms. The
calculator must feel instant: no torch, no Megatron, no YAML, no rich on --json. Prints the
medians of interleaved runs (see `_timing.py`: wall and CPU time, byte-code cached as an install
has it) of the bare start and of `trainmedic memory --json` run as the console script does; the
same through `python -m trainmedic` (which also pays for runpy) and without trainmedic's
byte-code cached (a checkout under PYTHONDONTWRITEBYTECODE: Python compiles every one of its
modules at every start) are printed for information. Exit 1 when the console script's CPU time
is more than 50 ms over the bare start's.

    python benchmarks/memory_speed.py [--runs 21]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _timing import Case, interleaved, program_env, trainmedic

SEED = (  # noqa: SIM905
    "--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --num-query-groups 8 "
    "--kv-channels 128 --ffn-hidden-size 28672 --seq-length 8192 --max-position-embeddings 8192 "
    "--micro-batch-size 1 --global-batch-size 1024 --tensor-model-parallel-size 8 "
    "--pipeline-model-parallel-size 4 --bf16 --use-distributed-optimizer"
).split()
BUDGET_MS = 50.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    memory = ["memory", *SEED, "--json", "--no-probe"]
    with tempfile.TemporaryDirectory() as tmp:
        times = interleaved({
            "bare": Case([sys.executable, "-c", "pass"]),
            "memory": Case(trainmedic(*memory)),
            "python -m": Case([sys.executable, "-m", "trainmedic", *memory]),
            # as in a checkout under PYTHONDONTWRITEBYTECODE (an empty prefix is no prefix)
            "no byte-code": Case(trainmedic(*memory), {"PYTHONDONTWRITEBYTECODE": "1",
                                                       "PYTHONPYCACHEPREFIX": ""}),
        }, args.runs, program_env(Path(tmp)))
    bare = times["bare"]
    print(f"medians of {args.runs} interleaved runs")
    print(f"python -c pass:                        {bare.ms()}")
    for name, label in (("memory", "trainmedic memory --json:"),
                        ("python -m", "python -m trainmedic memory --json:"),
                        ("no byte-code", "  the same, byte-code not cached:")):
        t = times[name]
        print(f"{label:38s} {t.ms()}   +{(t.cpu - bare.cpu) * 1000:.0f} ms CPU, "
              f"+{(t.wall - bare.wall) * 1000:.0f} ms wall over the bare start")
    over = (times["memory"].cpu - bare.cpu) * 1000
    print(f"budget: bare start + {BUDGET_MS:.0f} ms: +{over:.0f} ms "
          f"({'ok' if over <= BUDGET_MS else 'OVER'})")
    return 0 if over <= BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
