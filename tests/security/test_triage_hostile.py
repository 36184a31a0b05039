"""Hostile logs and user trees against triage: long digit runs, escape sequences in captured
fields, secrets in the guess, corrupt .gz, unsafe user regexes, lines naming thousands of ranks.

Each case was a bug found by review (a quadratic regex, a traceback, a raw ESC on stdout, a
password in the summary, a hang). Timed cases run in a child with a generous limit that only an
unbounded regression exceeds; speeds are measured in `benchmarks/`.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import zlib

import pytest
from hostile import HOSTILE, leaks
from test_bounded import run_limited

from trainmedic.cli import main
from trainmedic.trees.siglint import regex_risk

OOM = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
DIGITS = "1" * 8000


def test_long_digit_runs_keep_the_line_readers_linear():
    # before: 1.2 s per host-prefix line and 9.6 s per OOM line, so about 65 s for this
    code = f"""
from trainmedic.triage.hooks import oom_numbers
from trainmedic.triage.lineinfo import line_host, line_rank
for _ in range(30):
    assert line_host("a{DIGITS}:x RuntimeError: y") is None
    line_rank("[PG " * 2000)
for _ in range(3):
    oom_numbers("CUDA out of memory. {DIGITS}")
print("done")
"""
    result, _peak = run_limited([], code=code, timeout=20)
    assert result.returncode == 0 and "done" in result.stdout, result.stderr


@pytest.mark.parametrize("words", ["iteration 1/ ", "1 iteration ", "OVERFLOW! ",
                                   "Gradient overflow.  Skipping step "])
def test_a_line_repeating_progress_words_is_read_in_linear_time(words, fed_in_linear_time):
    # before: the plain "step N ... loss X" regex (and the fp16 overflow ones) tried a lazy gap
    # from every marker: 0.14 s for 600 "iteration 1/" on one 8 KB line, 16x that for 4x it
    fed_in_linear_time(lambda repeats: words * repeats)


def test_a_yolo_row_look_alike_with_a_run_of_blanks_is_read_in_linear_time(fed_in_linear_time):
    # before: the blanks after the GPU memory could be split between two patterns in every way
    # (20,000 blanks with no colon after them took 3.4 s)
    fed_in_linear_time(lambda repeats: "1/2 3G " + " " * repeats + "x 5%|")


def test_a_table_header_look_alike_is_read_in_linear_time(fed_in_linear_time):
    # before: the PrintReport header pattern let a run of letters split into keys in
    # exponentially many ways; a stray character after 22 letters took 28 s
    fed_in_linear_time(lambda repeats: "epoch main/loss " + "a" * repeats + "!")


def test_a_progress_bar_with_one_long_word_is_read_in_linear_time(fed_in_linear_time):
    # before: a postfix key was tried from every character of a long word (quadratic)
    fed_in_linear_time(lambda repeats: "Epoch 0:  10%|#  | 1/10 [00:01<00:09, 1.00it/s, "
                       + "a1_" * repeats + "!]")


def test_the_slow_symptom_reads_a_timer_line_with_one_long_word_in_linear_time():
    # before: a Megatron timer key was tried from every character of a long word (quadratic)
    import time

    from trainmedic.triage.trends import slow_hint

    def cost(repeats: int) -> float:
        lines = [(1, "time (ms) | forward-compute: 1.0 | " + "a1_" * repeats + "!")]
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            slow_hint(lines)
            best = min(best, time.perf_counter() - start)
        return best

    small, large = cost(1000), cost(4000)
    assert large < 9 * max(small, 1e-5), (small, large)


def test_a_line_repeating_iteration_markers_is_read_in_linear_time_by_the_block_reader():
    # before: the block reader's time-per-iteration regex tried a lazy gap from every marker of
    # a line: 0.1 s for 1000 "iteration 1/" on one line among Megatron's, 12x that for 4x it
    import io
    import re
    import time
    from pathlib import Path

    from trainmedic.triage.loss import LossTracker

    fixture = Path(__file__).parents[1] / "fixtures" / "loss" / "megatron_lm_moe_timestamped.log"
    real = fixture.read_text(encoding="utf-8").splitlines()[1]  # a real iteration line

    def iteration(step: int) -> str:
        return re.sub(r"iteration +\d+/", f"iteration {step:8d}/", real)

    def cost(repeats: int) -> float:
        lines = [*map(iteration, range(1, 41)), "iteration 1/ " * repeats,
                 *map(iteration, range(41, 81))]
        data = ("\n".join(lines) + "\n").encode()
        best = float("inf")
        for _ in range(5):
            tracker = LossTracker()
            start = time.perf_counter()
            tracker.read_megatron(io.BytesIO(data), "x.log")
            best = min(best, time.perf_counter() - start)
            assert tracker.block_lines and tracker.series.a.count == 80
        return best

    small, large = cost(1000), cost(4000)
    # linear: about 4x for 4x the line; quadratic: about 16x (a generous bound between them)
    assert large < 9 * max(small, 1e-5), (small, large)


def test_a_line_repeating_saving_checkpoint_is_read_quickly(tmp_path):
    # before: about 12 s per line (a regex with two lazy gaps), so minutes for this file
    log = tmp_path / "saves.log"
    log.write_text(("Saving checkpoint " * 450 + "\n") * 10 + OOM + "\n")
    result, _peak = run_limited(["triage", "--no-grep", str(log)], timeout=30)
    assert result.returncode == 1, result.stderr


def test_a_file_of_long_digit_lines_is_triaged_quickly(tmp_path):
    log = tmp_path / "digits.log"
    log.write_text("".join(f"a{DIGITS}:x RuntimeError: y\n" for _ in range(30)))
    result, _peak = run_limited(["triage", "--no-grep", str(log)], timeout=20)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr


LONG = "9" * 5000
# each line once raised ValueError (int() of over 4300 digits, or float("1.2.3")) out of triage
# (a line stays under the scanner's LINE_CAP, which would cut a longer one in the middle)
NUMBER_LINES = [
    f"[rank0]: missing ranks: {{{LONG}, 3}}",
    f"NVRM: Xid (PCI:0000:3b:00): {LONG}, pid=1",
    f"CheckpointingException: Global shape mismatch for loaded (({LONG}, 68)) and expected "
    "((4096, 72)) tensor for key w",
    f"{OOM} Process {LONG} has 3.00 GiB memory in use.",
    f"[rank{LONG}]: RuntimeError: boom",
    f"Root Cause (first observed failure):\n  rank      : {LONG} (local_rank: 1)",
    f"Root Cause (first observed failure):\n  rank      : 1 (local_rank: {LONG})",
    f"Root Cause (first observed failure):\n  exitcode  : {LONG} (pid: 1)",
    f"Root Cause (first observed failure):\n  exitcode  : 1 (pid: {LONG})",
    f"Process {LONG} exits with return code = 1",
    f"Process 41 exits with return code = {LONG}",
    "time this epoch = 1.2.3",
    "Iteration duration: .",
    "time (ms) | forward-compute: 1.2.3 | backward-compute: 4..5",
    "time(s): 1.2.3.4",
]


@pytest.mark.parametrize("line", NUMBER_LINES, ids=range(len(NUMBER_LINES)))
def test_numbers_too_long_or_malformed_raise_nothing(tmp_path, capsys, line):
    log = tmp_path / "n.log"
    log.write_text(f"{line}\n{OOM}\n")
    assert main(["triage", str(log), "--no-grep"]) == 1
    assert "CUDA out of memory" in capsys.readouterr().out


def _hostile_folder(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / f"notes{HOSTILE.replace('/', '').replace(chr(0), '')}.md").write_text("notes")
    esc = "\x1b]52;c;Y3VybA==\x07"
    (folder / "rank0.log").write_text("\n".join([
        "Traceback (most recent call last):",
        f'  File "/srv/{esc}\x9b2J\u202e/train.py", line 12, in main',
        "[pod/trainer\x1b[2J\x07\x9b-0/pytorch] RuntimeError: an error nobody knows",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  host      : node7{esc}\x9b2J",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : 1 (pid: 41)",
    ]) + "\n")
    return folder


def test_captured_fields_reach_the_terminal_inert(tmp_path, capsys):
    folder = _hostile_folder(tmp_path)
    for args in ([], ["--all"], ["--no-grep"]):
        main(["triage", str(folder), *args])
        out = capsys.readouterr().out
        assert "skipped" in out and "node7" in out and "train.py" in out, out
        assert "on trainer" in out, out
        assert not leaks(out), leaks(out)
    main(["triage", str(folder), "--json"])
    data = json.loads(capsys.readouterr().out)
    text = json.dumps(data, ensure_ascii=False)
    assert "node7" in text and "train.py" in text
    assert not leaks(text), leaks(text)


SECRETS = ("hunter2secret", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345")


def test_the_guess_summary_quotes_the_error_redacted(tmp_path, capsys):
    log = tmp_path / "job.log"
    log.write_text("Traceback (most recent call last):\n"
                   f'  File "/home/u/token={SECRETS[1]}/x.py", line 3, in connect\n'
                   "ConnectionRefusedError: could not reach "
                   f"postgres://admin:{SECRETS[0]}@db.internal:5432/runs token={SECRETS[1]}\n")
    assert main(["triage", str(log)]) == 1
    out = capsys.readouterr().out
    assert "guess" in out and "ConnectionRefusedError" in out
    assert not [s for s in SECRETS if s in out]
    main(["triage", str(log), "--json"])
    raw = capsys.readouterr().out
    assert "unrecognised-error" in raw
    assert not [s for s in SECRETS if s in raw]


def _corrupt_gz(path, *, deep: bool) -> None:
    """A .gz whose header is fine and whose deflate data is not (zlib.error, not OSError)."""
    packed = gzip.compress(b"".join(b"line %d %s\n" % (i, OOM.encode()) for i in range(200000)))
    rng = random.Random(7)
    for attempt in range(500):
        start = (len(packed) // 2 if deep else 12) + attempt * 7
        bad = bytearray(packed)
        for k in range(start, start + 30):
            bad[k] ^= rng.randrange(1, 256)
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(bytes(bad))) as stream:
                if deep:
                    stream.read(8192)  # the head reads fine: the scan meets the damage
                while stream.read(1 << 20):
                    pass
        except zlib.error:
            path.write_bytes(bytes(bad))
            return
        except (OSError, EOFError):
            continue
    pytest.fail("no corruption that zlib itself rejects")


@pytest.mark.parametrize("deep", [False, True])
@pytest.mark.parametrize("grep", [True, False])
def test_a_corrupt_gz_is_one_line_and_exit_2(tmp_path, capsys, deep, grep):
    bad = tmp_path / "bad.log.gz"
    _corrupt_gz(bad, deep=deep)
    assert main(["triage", str(bad), *([] if grep else ["--no-grep"])]) == 2
    err = capsys.readouterr().err
    assert "bad.log.gz" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


UNSAFE_SIGNATURE = """\
      - id: our-slow
        title: a signature whose regex backtracks exponentially
        kind: cause
        needles: ["QUOTA_EXCEEDED"]
        match: '(a+)+b'
        example: "QUOTA_EXCEEDED aab"
"""


def test_an_unsafe_user_regex_is_skipped_with_a_note(tmp_path, user_tree):
    folder = user_tree(UNSAFE_SIGNATURE)
    log = tmp_path / "job.log"
    log.write_text("starting\nQUOTA_EXCEEDED " + "a" * 40 + "\n")
    result, _peak = run_limited(["triage", str(log), "--trees", str(folder)], timeout=30)
    assert "our-slow" in result.stderr and "trainmedic lint" in result.stderr, result.stderr
    assert result.returncode == 2  # nothing found, and a signature could not be used
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("pattern", ["(a|a)*b", "x(.*)y", "(?:.*)?c", "(?:a|b|ab)+c",
                                     "(?:x(.*))+y"])
def test_regex_risk_sees_slow_shapes_inside_groups(pattern):
    assert regex_risk(pattern) is not None


@pytest.mark.parametrize("pattern", ["(foo|bar)*x", r"QUOTA_EXCEEDED for team \w+",
                                     "^(?=.*a).*b", "x.*", r"z(?:\d|x)+y", "a(b|c)d"])
def test_regex_risk_leaves_safe_shapes_alone(pattern):
    assert regex_risk(pattern) is None


def test_lines_naming_thousands_of_ranks_keep_a_bounded_set(tmp_path, capsys):
    from trainmedic.triage.scanner import MAX_RANKS

    lines = [f"[rank0]: missing ranks: {{{', '.join(str(r) for r in range(i, i + 400))}}}"
             for i in range(0, 20000, 400)]
    log = tmp_path / "desync.log"
    log.write_text("\n".join(lines) + "\n")
    assert main(["triage", str(log), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    finding = next(f for f in data["findings"] if f["signature"] == "lagging-ranks")
    assert len(finding["ranks"]) == MAX_RANKS
    assert " and more" in finding["summary"]
    assert len(data["ranks"]["ranks_seen"]) <= MAX_RANKS
