"""Throughput of `trainmedic triage` on long logs, as a ratio to `grep -E -c`.

Generated logs in /tmp, each timed on the same file against its reference:
- noisy (default 2 GB): per step, NCCL INFO chatter and Python warnings from several ranks, a
  Megatron-LM iteration line, a checkpoint line every 500 steps, and near the end an OOM on one
  rank followed by watchdog timeouts on the others;
- dense (default 400 MB): a long run's log, where nearly every line is an iteration line
  (Megatron-LM core's `training_log` template with its timestamp, as in
  tests/fixtures/loss/megatron_lm_moe_timestamped.log), checkpoint lines, the same ending.
- errors (default 400 MB): the noisy log's chatter with a retry loop in it, each step ~8 of
  its ~70 lines a warning with an error word that no signature knows (`Error while calling
  W&B API: rate limit exceeded`, `Exception in exporter thread 3, retrying`), the same
  ending: grep's first pass leaves such lines aside (only the last error of a source is ever
  reported, and only when no cause is found: `unmatched.ErrorTracker`).
- quiet (default 1 GB): the noisy log's chatter and a few harmless warnings, and no failure (a
  healthy run's log, or a quiet hang's): no cause, so the lines left aside are searched for
  the guess; with no error at its end that search runs beside the first pass
  (`sources.SideLines`). Measured at load 1.1-1.9 on 2 shared cores: 0.48-0.52x before (a
  second grep after the first pass), 0.57-0.66x after; the other logs, twice each at load
  1.7-1.9: errors (400 MB) 0.58-0.61x, noisy (1 GB) 0.68-0.69x, dense 0.74-0.75x.
Reference: `grep -E -c` with the needles triage searches that file for (`needles_for`): on
the noisy log every needle, progress lines included; on the dense, errors and quiet logs the
signature and side-line needles, because their iteration lines are read by the loss package's
block reader, not prefiltered. The generic error words count among the needles, though the first
pass leaves them to the error tracker. The time of `grep -E -c` with every needle is printed
beside it.
Triage runs as a user runs it (`trainmedic triage FILE --json`, a fresh process), with its
peak RSS. Budget (DESIGN.md): triage throughput >= 0.5 x grep's, on each log.
Run: .venv/bin/python benchmarks/triage_throughput.py [--size 2G] [--dense-size 400M]
     [--errors-size 400M] [--quiet-size 1G] [--only noisy|dense|errors|quiet]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time

NOISE = [
    b"node%(n)d:%(pid)d:%(tid)d [%(r)d] NCCL INFO Channel %(c)02d/0 : %(r)d[%(r)d] -> %(p)d[%(p)d] "
    b"via P2P/IPC/read",
    b"node%(n)d:%(pid)d:%(tid)d [%(r)d] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
    b"node%(n)d:%(pid)d:%(tid)d [%(r)d] NCCL INFO comm 0x7f3be8001d10 rank %(r)d nranks 64 cudaDev "
    b"%(r)d nvmlDev %(r)d busId 1b000 commId 0x5c1a8b7e2f - Init COMPLETE",
    b"[default%(r)d]:/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: "
    b"UserWarning: torch.utils.checkpoint: please pass in use_reentrant=True or False explicitly.",
    b"[default%(r)d]:  warnings.warn(",
    b" > rank %(r)d: batch-generator: %(c)d.21 | forward-compute: 193.77 | backward-compute: 73.02",
]


def _write(path: str, size: int, steps_per_block: int, lines, *, failure: bool = True) -> None:
    """Blocks of `lines(step)` until the file has `size` bytes, then the failure at the end
    (unless `failure` is False)."""
    step = 0
    written = 0
    with open(path, "wb") as out:
        while written < size:
            block: list[bytes] = []
            for _ in range(steps_per_block):
                step += 1
                block += lines(step)
            data = b"\n".join(block) + b"\n"
            out.write(data)
            written += len(data)
        if failure:
            _ending(out, step)


def _noise(step: int) -> float:
    """A step's loss noise in [0, 0.05): a multiplicative hash of the step, so a converged loss
    never repeats a period of values exactly (a loss that does is a run whose weights stopped
    changing: triage says so, and a healthy run's log must not read like one)."""
    return (step * 2654435761 % 2**32) / 2**32 / 20


def _noisy_step(step: int) -> list[bytes]:
    block = []
    for k in range(60):  # ~60 lines of chatter per step
        r = (step + k) % 8
        block.append(NOISE[k % len(NOISE)] % {
            b"n": r // 8, b"pid": 4000 + r, b"tid": 5000 + k, b"r": r,
            b"p": (r + 1) % 8, b"c": k % 32})
    loss = 2.0 + 8.0 * 2.718 ** (-step / 3000) + _noise(step)
    block.append(
        b" [2024-05-01 12:%02d:%02d] iteration %8d/ 1000000 | consumed samples: %12d |"
        b" elapsed time per iteration (ms): 4247.9 | learning rate: 2.999E-04 | global"
        b" batch size:   512 | lm loss: %.6E | loss scale: 1.0 | grad norm: 0.812 |"
        b" number of skipped iterations:   0 | number of nan iterations:   0 |"
        % (step // 60 % 60, step % 60, step, step * 512, loss))
    if step % 500 == 0:
        block.append(b"  successfully saved checkpoint from iteration %7d to /ckpt" % step)
    return block


def generate(path: str, size: int) -> None:
    """The noisy log: chatter from every rank around each iteration line."""
    _write(path, size, 64, _noisy_step)


# Warnings that fail nothing, each log's own: a retry loop's, whose error words no signature
# knows (the errors log), and a healthy run's (the quiet log). `_warning` fills them in.
WARNINGS = {
    "retry": [
        b"[default%(r)d]:[2024-05-01 12:%(m)02d:%(s)02d,%(ms)03d] [WARNING] [wandb] Error while "
        b"calling W&B API: rate limit exceeded (HTTP 429) for run %(c)d, retrying (%(a)d/5)",
        b"[default%(r)d]:[2024-05-01 12:%(m)02d:%(s)02d,%(ms)03d] [WARNING] [metrics] Exception in "
        b"exporter thread %(k)d, retrying in 2s",
    ],
    "harmless": [
        b"[default%(r)d]:/usr/local/lib/python3.10/dist-packages/torch/distributed/fsdp/"
        b"_state_dict_utils.py:773: FutureWarning: the `state_dict_type` API will be removed in "
        b"a future release.",
        b"[default%(r)d]:[2024-05-01 12:%(m)02d:%(s)02d,000] [WARNING] [checkpointing] slow "
        b"storage: checkpoint save took 312.4 s (threshold 300 s)",
    ],
}


def _warning(kind: str, which: int, step: int, rank: int, k: int = 0) -> bytes:
    """Warning `which` of `kind`, printed by `rank` at `step` (`k`: its place in the step)."""
    return WARNINGS[kind][which] % {
        b"r": rank, b"m": step // 60 % 60, b"s": step % 60, b"ms": k * 111 % 1000,
        b"c": step % 4096, b"a": k // 2 % 5 + 1, b"k": k}


def _errors_step(step: int) -> list[bytes]:
    block = _noisy_step(step)
    for k in range(8):  # a retry loop: the same two warnings, over and over
        block.insert(k * 7, _warning("retry", k % 2, step, (step + k) % 8, k))
    return block


def generate_errors(path: str, size: int) -> None:
    """The noisy log with a retry loop's warnings in every step."""
    _write(path, size, 64, _errors_step)


def _quiet_step(step: int) -> list[bytes]:
    block = _noisy_step(step)
    if step % 2000 == 0:  # a few harmless warnings, nothing that fails
        block.append(_warning("harmless", step // 2000 % 2, step, step % 8))
    return block


def generate_quiet(path: str, size: int) -> None:
    """The noisy log's chatter, a few harmless warnings, and no failure: a healthy run (or one
    that hung quietly) stopped while it printed."""
    _write(path, size, 64, _quiet_step, failure=False)


def _ending(out, step: int) -> None:
    out.write(
        b"[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        b"GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Including "
        b"non-PyTorch "
        b"memory, this process has 78.11 GiB memory in use. Of the allocated memory 70.20 GiB "
        b"is allocated by PyTorch, and 6.90 GiB is reserved by PyTorch but unallocated.\n")
    for r in (0, 1, 2, 4, 5, 6, 7):
        out.write(
            b"[rank%d]:[E501 12:21:07.1 ProcessGroupNCCL.cpp:607] [Rank %d] Watchdog caught "
            b"collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, NumelIn=1, "
            b"NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
            % (r, r, step))


DENSE = (b" [2024-05-01 12:%02d:%02d.%06d] iteration %8d/ 1000000 | consumed samples: %12d |"
         b" elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f |"
         b" learning rate: %.6E | global batch size:  1024 | lm loss: %.6E | loss scale: 1.0 |"
         b" grad norm: %.3f | number of skipped iterations:   0 | number of nan iterations:   0 |")


def _dense_step(step: int) -> list[bytes]:
    noise = _noise(step)
    loss = 2.0 + 8.0 * 2.718 ** (-step / 30000) + noise
    block = [DENSE % (step // 60 % 60, step % 60, step * 7 % 1000000, step, step * 1024,
                      5926.4 + noise * 100, 220.4 - noise, 3.0e-4, loss, 0.8 + noise)]
    if step % 1000 == 0:
        block.append(b"  successfully saved checkpoint from iteration %7d to "
                     b"/lustre/ckpt/run [ t 1/1, p 1/1 ]" % step)
    return block


def generate_dense(path: str, size: int) -> None:
    """Nearly every line an iteration line, as a long run's rank-last log is."""
    _write(path, size, 4096, _dense_step)


def needles_for(path: str) -> list[str]:
    """The needles triage searches this file for (the scanner's own choice)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from trainmedic.triage.scanner import _MEGATRON_LINE, SNIFF_BYTES, Scanner

    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    scanner = Scanner()  # its prefilter needles come from the built-in trees' signatures
    return scanner.side_needles if _MEGATRON_LINE.search(head) else scanner.needles


def grep_pattern(needles: list[str] | None = None) -> str:
    """An ERE equivalent to the needles (the same literals, as one alternation)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from trainmedic.triage.scanner import Scanner

    return "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", n)
                    for n in (needles or Scanner().needles))


def timed(cmd: list[str]) -> tuple[float, int, bytes]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=dict(os.environ, LC_ALL="C"), timeout=3600)
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return dt, rss, proc.stdout


def _size(text: str) -> int:
    unit = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * unit[text[-1].upper()]) if text[-1].upper() in unit \
        else int(text)


def run(name: str, path: str, size: int, make, keep: bool) -> float:
    import json

    if not os.path.exists(path) or os.path.getsize(path) < size:
        print(f"generating {size / 2**30:.2f} GiB {name} log at {path} ...", flush=True)
        make(path, size)
    real = os.path.getsize(path)
    try:
        # warm the page cache so both read from memory
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, timeout=3600)
        # triage first: RUSAGE_CHILDREN's max RSS is then triage's (or its grep child's)
        t_dt, t_rss, t_out = timed([sys.executable, "-m", "trainmedic", "triage", path,
                                    "--json"])
        needles = needles_for(path)
        g_dt, _g_rss, g_out = timed(["grep", "-E", "-c", grep_pattern(needles), path])
        a_dt, _a_rss, _ = timed(["grep", "-E", "-c", grep_pattern(), path])
        report = json.loads(t_out)
        top = report["findings"][0]["link"] if report["findings"] else None
        gb = real / 1e9
        print(f"[{name}] log: {gb:.2f} GB, {int(g_out.strip() or 0)} lines matched by grep -E -c "
              f"({len(needles)} needles); loss points read: {report['loss']['count']}")
        print(f"[{name}] grep -E -c        : {g_dt:6.2f} s  {gb / g_dt:6.2f} GB/s"
              f"   (every needle: {a_dt:.2f} s)")
        print(f"[{name}] trainmedic triage : {t_dt:6.2f} s  {gb / t_dt:6.2f} GB/s  peak RSS "
              f"{t_rss / 1024:.0f} MiB  top finding {top}")
        ratio = g_dt / t_dt
        print(f"[{name}] ratio (triage throughput / grep throughput): {ratio:.2f}  "
              f"(budget >= 0.50: {'OK' if ratio >= 0.5 else 'MISSED'})")
        return ratio
    finally:
        if not keep:
            os.unlink(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="2G", help="noisy log size, e.g. 500M, 2G (default 2G)")
    ap.add_argument("--dense-size", default="400M", help="dense log size (default 400M)")
    ap.add_argument("--errors-size", default="400M", help="errors log size (default 400M)")
    ap.add_argument("--quiet-size", default="1G", help="quiet log size (default 1G)")
    ap.add_argument("--only", choices=("noisy", "dense", "errors", "quiet"),
                    help="time one of the logs")
    ap.add_argument("--path", default="/tmp/trainmedic_triage_bench.log")
    ap.add_argument("--dense-path", default="/tmp/trainmedic_triage_bench_dense.log")
    ap.add_argument("--errors-path", default="/tmp/trainmedic_triage_bench_errors.log")
    ap.add_argument("--quiet-path", default="/tmp/trainmedic_triage_bench_quiet.log")
    ap.add_argument("--keep", action="store_true", help="keep the generated logs")
    args = ap.parse_args()
    ratios = []
    if args.only in (None, "noisy"):
        ratios.append(run("noisy", args.path, _size(args.size), generate, args.keep))
    if args.only in (None, "dense"):
        ratios.append(run("dense", args.dense_path, _size(args.dense_size), generate_dense,
                          args.keep))
    if args.only in (None, "errors"):
        ratios.append(run("errors", args.errors_path, _size(args.errors_size), generate_errors,
                          args.keep))
    if args.only in (None, "quiet"):
        ratios.append(run("quiet", args.quiet_path, _size(args.quiet_size), generate_quiet,
                          args.keep))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
