"""Issue 20, bounded reads: hostile logs, scripts and trees end quickly, in bounded memory.

Hostile inputs run in a child process with an address-space limit and a generous timeout: the
limits only catch a regression to unbounded (the old code took 43 s on a 64 KB line, hours on a
1 MB one, and 4 GB on a 2 GB file); the precise speeds are measured in `benchmarks/`.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic.cli import main

SRC = str(Path(__file__).resolve().parents[2] / "src")
OOM = b"[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."


# The measured process is started by this small one, not by pytest: Linux counts the memory a
# child had before its exec (a copy of its parent) in its peak RSS, and pytest is large.
_MEASURE = """
import os, resource, subprocess, sys, threading
fd, memory, timeout, argv = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
proc = subprocess.Popen(argv, preexec_fn=lambda: resource.setrlimit(
    resource.RLIMIT_AS, (memory, memory)))
timer = threading.Timer(timeout, proc.kill)
timer.start()
_, status, usage = os.wait4(proc.pid, 0)
timer.cancel()
with os.fdopen(fd, "w") as report:
    report.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_limited(args: list[str], *, stdin=None, timeout: float = 60, memory: int = 1 << 30,
                code: str | None = None) -> tuple[subprocess.CompletedProcess, int]:
    """trainmedic (or `code`) in a child under an address-space limit; (result, peak RSS KiB
    of the child and the processes it started, such as grep)."""
    argv = [sys.executable, "-c", code] if code else [sys.executable, "-m", "trainmedic", *args]
    env = dict(os.environ, PYTHONPATH=SRC)
    read, write = os.pipe()
    try:
        done = subprocess.run([sys.executable, "-c", _MEASURE, str(write), str(memory),
                               str(timeout), *argv], stdin=stdin, capture_output=True, env=env,
                              pass_fds=(write,), timeout=timeout + 60, check=False)
    finally:
        os.close(write)
    with os.fdopen(read) as report:
        code_text, _, peak = report.read().partition(" ")
    returncode = int(code_text)
    if returncode == -9:
        pytest.fail(f"{args or (code or '')[:60]} did not finish within {timeout} s")
    result = subprocess.CompletedProcess(argv, returncode, done.stdout.decode(),
                                         done.stderr.decode())
    return result, int(peak)


def test_a_1mb_line_is_cut_around_its_signature(tmp_path):
    payload = ("QUJD" * (1 << 18)) + " WANDB_API_KEY=deadbeefdeadbeefdeadbeef " + "eHl6" * 1000
    log = tmp_path / "long.log"
    log.write_text(OOM.decode() + " payload " + payload + "\n", encoding="utf-8")
    done, _ = run_limited(["triage", str(log), "--json"], timeout=60)
    assert done.returncode == 1, done.stderr
    text = __import__("json").loads(done.stdout)["findings"][0]["evidence"][0]["text"]
    assert text.startswith("[rank0]: torch.OutOfMemoryError") and "characters cut" in text
    assert len(text) < 2200 and "deadbeef" not in done.stdout


def test_a_signature_in_the_middle_of_a_long_line_is_still_found(tmp_path):
    log = tmp_path / "mid.log"
    log.write_bytes(b"x" * 500_000 + b" " + OOM + b" " + b"y" * 500_000 + b"\n")
    for grep in ([], ["--no-grep"]):
        done, _ = run_limited(["triage", str(log), *grep])
        assert done.returncode == 1 and "CUDA out of memory" in done.stdout, done.stderr


def test_redaction_is_linear_on_adversarial_text():
    """Runs of every pattern's own characters: quadratic code would take hours here."""
    code = (
        f"import sys; sys.path.insert(0, {SRC!r})\n"
        "from trainmedic.redact import redact_text\n"
        "frags = ['x', 'a=', 'a:', 'PASSWORD=\"', 'password: ', 'TOKEN=', '-----BEGIN PRIVATE "
        "KEY-----', '-----END ', 'https://', 'a://a:', '@', 'eyJ', 'eyJaaaaaaaaaa.', 'hf_', "
        "'--password ', 'wandb login ', 'login x ', 'sshpass -p ', '-u a:', 'Authorization: ', "
        "'Bearer ', 'MII', 'AKIA', '&a', '\\\\\"', 'token=\\\\\"', 'machine ', 'Cookie: ', "
        "'key=', 'a.b.c.', '-', '=', ':', 'x://', '::', '\"', \"'\"]\n"
        "for f in frags:\n"
        "    redact_text((f * (262144 // len(f) + 1))[:262144])\n"
        "print('done')\n")
    done, _ = run_limited([], code=code, timeout=240)
    assert done.stdout.strip() == "done", done.stderr


def test_a_2gb_file_without_newlines_stays_small(tmp_path):
    big = tmp_path / "n.log"
    with big.open("wb") as handle:
        handle.truncate(2 << 30)  # sparse: no disk used
    done, peak_kib = run_limited(["triage", str(big)], timeout=120)
    assert done.returncode == 2, done.stderr
    # zeros are told apart from a log before reading (triage's sniff), or cut while reading
    said = done.stderr
    assert ("without a line break" in said or "binary, not a text log" in said) \
        and len(said.splitlines()) == 1
    assert peak_kib < 100 * 1024, f"peak RSS {peak_kib} KiB"


def test_stdin_of_endless_zeros_ends_with_a_clear_message():
    with open("/dev/zero", "rb") as zero:
        for grep in ([], ["--no-grep"]):
            done, _ = run_limited(["triage", "-", *grep], stdin=zero, timeout=60)
            assert done.returncode == 2
            assert "<stdin>: stopped reading" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("use_grep", [True, False], ids=["grep", "python"])
def test_a_decompression_bomb_is_cut(tmp_path, monkeypatch, capsys, use_grep):
    from trainmedic.triage import sources

    monkeypatch.setattr(sources, "GZ_RATIO_AFTER", 1 << 20)
    bomb = tmp_path / "bomb.log.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as handle:
        handle.write(OOM + b"\n")
        for _ in range(64):
            handle.write(b"x\n" * (1 << 18))  # 32 MiB of short lines, ~1000x
    assert main(["triage", str(bomb), *([] if use_grep else ["--no-grep"])]) == 1
    captured = capsys.readouterr()
    assert "CUDA out of memory" in captured.out  # what came before the cut is kept
    assert "decompression bomb" in captured.err


def test_a_line_grep_cannot_hold_is_finished_by_python(tmp_path, monkeypatch, capsys):
    from trainmedic.triage import sources

    if sources.grep_available() is None:
        pytest.skip("grep not installed")
    monkeypatch.setattr(sources, "GREP_MAX_MEMORY", 24 << 20)
    log = tmp_path / "long.log"
    log.write_bytes(OOM + b"\n" + b"z" * (20 << 20) + b"\n" + OOM.replace(b"rank0", b"rank7")
                    + b"\n")
    assert main(["triage", str(log), "--json"]) == 1
    data = __import__("json").loads(capsys.readouterr().out)
    lines = sorted(e["line"] for f in data["findings"] for e in f["evidence"])
    assert lines == [1, 3] and sorted(data["findings"][0]["ranks"]) == [0, 7]


def test_streams_fed_to_grep_get_line_breaks_and_keep_line_numbers(monkeypatch):
    import io

    from trainmedic.triage import sources
    from trainmedic.triage.scanner import Scanner

    if sources.grep_available() is None:
        pytest.skip("grep not installed")
    monkeypatch.setattr(sources, "MAX_LINE", 1 << 20)
    data = OOM + b"\n" + b"w" * (5 << 20) + b"\n" + OOM.replace(b"rank0", b"rank3") + b"\n"
    scanner = Scanner(use_grep=True)
    scanner.scan_stream(io.BytesIO(data), "stream")
    [hit] = scanner.hits.values()
    assert [e[1] for e in hit.evidence] == [1, 3] and hit.ranks == {0, 3}


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_lint_refuses_what_is_not_a_regular_file(tmp_path, kind):
    target = tmp_path / "t.yaml"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    for args in (["lint", str(target)], ["--trees", str(target), "lint"]):
        done, _ = run_limited(args, timeout=60)
        assert done.returncode in (1, 2), done.stderr
        assert "not a regular file" in done.stdout + done.stderr
        assert "Traceback" not in done.stderr


SCRIPTS = {
    "nested defaults": "X=" + "${A:-" * 50_000 + "x" + "}" * 50_000 + "\n",
    "nested substitutions": "X=" + "$( " * 50_000 + "x" + " )" * 50_000 + "\n",
    "self-doubling variable": "A=xxxxxxxxxx\n" + 'A="$A$A"\n' * 40,
    "self-doubling array": "A=(x x x x x x x x x x)\n" + 'A=("${A[@]}" "${A[@]}")\n' * 40,
    "tower of powers": "X=$(( ((((((2**64)**64)**64)**64)**64)**64) ))\n"
                       "python pretrain_gpt.py --num-layers $X --hidden-size 64\n",
    "many commands on a line": "a;" * 300_000 + "\n",
    "deep if": "if true; then\n" * 5000 + "fi\n" * 5000,
    "many lines": "true\n" * 100_000 + "python pretrain_gpt.py --num-layers 2\n",
    "a 1 MB word": "X=" + "a" * 1_000_000 + "\n",
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_hostile_launch_scripts_end_with_one_line(tmp_path, name):
    script = tmp_path / "run.sh"
    script.write_text(SCRIPTS[name], encoding="utf-8")
    done, _ = run_limited(["memory", "--script", str(script)], timeout=90, memory=1 << 30)
    assert done.returncode == 2, (done.returncode, done.stderr[-300:])
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_fifo_as_launch_script_is_refused(tmp_path):
    os.mkfifo(tmp_path / "run.sh")
    done, _ = run_limited(["memory", "--script", str(tmp_path / "run.sh")], timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stderr


def test_markdown_export_computes_each_trees_numbers_once(monkeypatch):
    """4,000 nodes took 7.2 s and 20,000 more than 180 s: node numbers were recomputed for
    every answer. Counted, not timed (benchmarks/export_scale.py times it)."""
    from trainmedic.export import markdown
    from trainmedic.trees import load_forest

    calls = []
    real = markdown.diagram_ids
    monkeypatch.setattr(markdown, "diagram_ids", lambda tree: calls.append(tree.id) or real(tree))
    forest = load_forest([])
    for tree in forest.trees.values():
        calls.clear()
        markdown.tree_markdown(forest, tree)
        assert len(calls) <= 2 * len(set(calls)), (tree.id, len(calls))
