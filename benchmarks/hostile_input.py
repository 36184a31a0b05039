"""Hostile input, timed: the numbers behind issue 20's "bounded time and memory on any input".

Each case runs `trainmedic` (or the redactor) in a child process and prints wall time and peak
RSS (the child and what it started, such as grep). Budgets from the issue: triage of a 1 MB line
under 1 s; a 2 GB file without newlines under 100 MB RSS; Markdown export linear in tree size
(the review measured 4,000 nodes 7.2 s and 20,000 over 180 s); redaction linear (the review's
64 KB line took 43 s). Exit 1 when a budget is missed.

    python benchmarks/hostile_input.py [--quick]
"""

from __future__ import annotations

import argparse
import base64
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
OOM = "[rank0]: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB. payload "


def run(argv: list[str], stdin=None) -> tuple[float, float, int]:
    """(seconds, peak RSS MiB, exit code) of one child."""
    env = dict(os.environ, PYTHONPATH=SRC, TRAINMEDIC_NO_CACHE="1")
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, proc.returncode


def trainmedic(*args: str) -> list[str]:
    return [sys.executable, "-m", "trainmedic", *args]


def chain_tree(folder: Path, nodes: int) -> None:
    lines = ["id: big", "title: Big", "summary: s", "start: q0", "nodes:"]
    questions = nodes // 2
    for i in range(questions):
        nxt = f"q{i + 1}" if i + 1 < questions else "f0"
        lines += [f"  q{i}:", f"    question: question {i}",
                  f"    answers: [{{text: yes, goto: f{i}}}, {{text: no, goto: {nxt}}}]",
                  f"  f{i}:", f"    fix: fix {i}", f"    why: because {i}",
                  f"    steps: [{{do: do it {i}}}]"]
    (folder / "big.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller trees")
    args = parser.parse_args()
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        payload = base64.b64encode(os.urandom(786432)).decode()
        (folder / "line.log").write_text(OOM + payload + "\n", encoding="utf-8")
        for grep in ([], ["--no-grep"]):
            secs, rss, _ = run(trainmedic("triage", str(folder / "line.log"), *grep))
            print(f"triage of a 1 MB line {' '.join(grep) or '(grep)'}: {secs:.2f} s, "
                  f"{rss:.0f} MiB (budget 1 s, including start-up)")
            missed += ["1 MB line"] if secs > 1.0 else []
        with (folder / "n.log").open("wb") as handle:
            handle.truncate(2 << 30)
        secs, rss, code = run(trainmedic("triage", str(folder / "n.log")))
        print(f"triage of 2 GB without newlines: {secs:.2f} s, {rss:.0f} MiB (budget 100 MiB), "
              f"exit {code}")
        missed += ["2 GB RSS"] if rss > 100 else []
        with open("/dev/zero", "rb") as zero:
            secs, rss, code = run(trainmedic("triage", "-"), stdin=zero)
        print(f"triage - < /dev/zero: {secs:.2f} s, {rss:.0f} MiB, exit {code}")
        sizes = [1000, 4000] if args.quick else [2000, 5000, 20000]
        per_node = []
        for nodes in sizes:
            tree_dir = folder / f"trees{nodes}"
            tree_dir.mkdir()
            chain_tree(tree_dir, nodes)
            secs, rss, code = run(trainmedic("--trees", str(tree_dir), "export", "big"))
            per_node.append(secs / nodes)
            print(f"export of {nodes} nodes: {secs:.2f} s, {rss:.0f} MiB, exit {code}")
        if per_node[-1] > 3 * per_node[0]:
            missed.append("export not linear")
    code = "\n".join([
        f"import sys, time; sys.path.insert(0, {SRC!r})",
        "from trainmedic.redact import redact_text",
        "for n in (65536, 262144, 1048576):",
        "    worst = 0.0",
        "    for f in ('a', 'a=', ':', 'https://', 'eyJ', '@', 'PASSWORD=\"', '-u a:'):",
        "        t = time.perf_counter(); redact_text((f * n)[:n])",
        "        worst = max(worst, time.perf_counter() - t)",
        "    print(f'redaction of {n >> 10} KiB, worst pattern: {worst:.2f} s')", ""])
    subprocess.run([sys.executable, "-c", code], check=False)
    print("missed: " + (", ".join(missed) if missed else "none"))
    return 1 if missed else 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # a regression cannot eat the host
    sys.exit(main())
