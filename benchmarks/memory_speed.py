"""How long `trainmedic memory --json` takes, against a bare Python start.

The calculator must feel instant (no torch, no Megatron, no rich on --json). Prints the median
wall time of each over several runs and their ratio.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

SEED = (  # noqa: SIM905
    "--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --num-query-groups 8 "
    "--kv-channels 128 --ffn-hidden-size 28672 --seq-length 8192 --max-position-embeddings 8192 "
    "--micro-batch-size 1 --global-batch-size 1024 --tensor-model-parallel-size 8 "
    "--pipeline-model-parallel-size 4 --bf16 --use-distributed-optimizer"
).split()
RUNS = 7


def median_wall(argv: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=120)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    bare = median_wall([sys.executable, "-c", "pass"])
    memory = median_wall([sys.executable, "-m", "trainmedic", "memory", *SEED, "--json",
                          "--no-probe"])
    print(f"python -c pass:               {bare * 1000:7.1f} ms")
    print(f"trainmedic memory --json:     {memory * 1000:7.1f} ms (with suggestions)")
    print(f"ratio vs bare Python start:   {memory / bare:7.2f}x")


if __name__ == "__main__":
    main()
