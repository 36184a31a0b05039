"""Logs full of error words no signature knows: the first pass leaves those lines aside, and the
last uncovered error is still the one reported, from a plain file, a .gz, stdin or pasted text.

The error is a real excerpt (a tune case of the corpus, its source URL on its first line), read
without any tree so that no signature knows it; the lines around it are generated, as the
throughput benchmark's are: a retry loop's warnings (an error word on each, no error) and NCCL
chatter (no needle at all).
"""

from __future__ import annotations

import gzip
import io
import os
import sys
from pathlib import Path

import pytest

from trainmedic.trees.forest import Forest
from trainmedic.triage import _finish, sources
from trainmedic.triage.scanner import Scanner
from trainmedic.triage.signatures import compile_forest
from trainmedic.triage.sources import Source

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import read_case  # noqa: E402

CASE = "sharding/fsdp_flatparameter_uniform_requires_grad_peft_transformers_27542.log"
ERROR = "ValueError: `FlatParameter` requires uniform `requires_grad`"


def _error_lines() -> list[str]:
    case = read_case(CORPUS / "cases" / CASE)
    assert case.split == "tune"  # unit tests read tune cases only
    return [f"[rank3]: {line}" for line in case.excerpt.splitlines()]


def _retry(n: int, first: int = 0) -> list[str]:
    return [f"[default{i % 8}]:[2024-05-01 12:00:{i % 60:02d},111] [WARNING] [wandb] Error while "
            f"calling W&B API: rate limit exceeded (HTTP 429) for run {i}, retrying "
            f"({i % 5 + 1}/5)" for i in range(first, first + n)]


def _chatter(n: int) -> list[str]:
    return [f"node0:4000:{5000 + i} [{i % 8}] NCCL INFO Channel {i % 32:02d}/0 : 0[0] -> 1[1] "
            "via P2P/IPC/read" for i in range(n)]


def _line_of(lines: list[str]) -> int:
    """The 1-based number of the line that holds ERROR."""
    return next(i for i, line in enumerate(lines, 1) if ERROR in line)


def _triage(tmp_path, monkeypatch, lines: list[str], form: str):
    """The report of triage, without any tree, on `lines` given as `form`."""
    data = ("\n".join(lines) + "\n").encode()
    scanner = Scanner(use_grep=form not in ("no-grep", "text"),
                      signatures=compile_forest(Forest()))
    if form == "text":
        source = Source(name="<pasted>", data=data)
    elif form == "stdin":
        class Stdin:
            buffer = io.BytesIO(data)
        monkeypatch.setattr(sys, "stdin", Stdin())
        source = Source(name="<stdin>")
    elif form == "gz":
        path = tmp_path / "train.log.gz"
        path.write_bytes(gzip.compress(data))
        source = Source(name=str(path), path=str(path))
    else:
        path = tmp_path / "train.log"
        path.write_bytes(data)
        source = Source(name=str(path), path=str(path))
    scanner.scan(source)
    return _finish(scanner)


FORMS = ["file", "no-grep", "gz", "stdin", "text"]


def _needs_grep(form: str) -> None:
    if form in ("file", "gz", "stdin") and sources.grep_available() is None:
        pytest.skip("grep not installed")


@pytest.mark.parametrize("form", FORMS)
def test_the_last_error_among_a_retry_loop_is_reported(tmp_path, monkeypatch, form):
    _needs_grep(form)
    lines = [*_retry(6000), *_error_lines(), *_retry(100, 6000)]  # within the ring after it
    assert len("\n".join(lines)) > sources.GREP_MIN_BYTES  # a file goes through grep
    report = _triage(tmp_path, monkeypatch, lines, form)
    (guess,) = report.findings
    assert guess.guess and ERROR in guess.summary and "raised at" in guess.summary
    assert guess.ranks == [3]
    assert guess.evidence[0].line == _line_of(lines)
    # the retry loop's lines were not read one by one
    assert report.candidate_lines < 100, report.candidate_lines


@pytest.mark.parametrize("form", FORMS)
def test_an_error_far_before_the_end_is_still_found(tmp_path, monkeypatch, form):
    _needs_grep(form)
    lines = [*_retry(20), *_error_lines(), *_chatter(30000)]  # ~2.5 MB after the error
    report = _triage(tmp_path, monkeypatch, lines, form)
    (guess,) = report.findings
    assert ERROR in guess.summary and guess.evidence[0].line == _line_of(lines)


@pytest.mark.parametrize("form", FORMS)
def test_more_error_lines_than_the_ring_holds(tmp_path, monkeypatch, form):
    """The error, then far more error-word lines than the tracker keeps, none an error: the
    ring's window is the last RING lines with an error word, as before, so the error is out of
    it; an exception after the loop is in it."""
    _needs_grep(form)
    lines = [*_error_lines(), *_retry(1000)]
    report = _triage(tmp_path, monkeypatch, lines, form)
    assert not any(ERROR in f.summary for f in report.findings)
    lines = [*_retry(1000), *_error_lines()]
    report = _triage(tmp_path, monkeypatch, lines, form)
    assert ERROR in report.findings[0].summary


ITERATION = (" [2024-05-01 12:00:00] iteration {:8d}/ 1000000 | consumed samples: 512 |"
             " elapsed time per iteration (ms): 4247.9 | learning rate: 2.999E-04 | global"
             " batch size:   512 | lm loss: 2.5E+00 | loss scale: 1.0 | grad norm: 0.812 |"
             " number of skipped iterations:   0 | number of nan iterations:   0 |")


def test_a_megatron_log_with_an_error_in_it(tmp_path, monkeypatch):
    """Iteration lines are the block reader's: the error among them is found again by grep,
    and an iteration line is never taken for an error line."""
    if sources.grep_available() is None:
        pytest.skip("grep not installed")
    lines = [ITERATION.format(i) for i in range(1, 2001)]
    lines += [*_retry(200), *_error_lines(), *_retry(200)]
    lines += [ITERATION.format(i) for i in range(2001, 4001)]
    for form in ("file", "no-grep", "text"):
        report = _triage(tmp_path, monkeypatch, lines, form)
        (guess,) = (f for f in report.findings if f.guess)
        assert ERROR in guess.summary and guess.evidence[0].line == _line_of(lines)
        assert report.loss.count == 4000


def test_lines_left_aside_are_searched_only_when_the_guess_needs_them():
    from trainmedic.triage.unmatched import ErrorTracker

    calls: list[int] = []

    def aside():
        calls.append(1)
        return [("ValueError: from the lines left aside", 5, None, None, None)]

    tracker = ErrorTracker()
    tracker.new_source("a.log", aside=aside)
    tracker.add("Traceback (most recent call last):", 3)
    tracker.add('  File "train.py", line 9, in main', 4, frame_only=True)
    tracker.finish()
    assert calls == []  # a cause found elsewhere never asks
    (last,) = tracker.uncovered
    assert calls == [1] and last.line == 5 and last.kind == "exception"
    assert last.frame == "train.py:9 in main"  # the frame read in the first pass, above it


def test_a_plain_file_with_a_cause_is_not_searched_again(tmp_path, monkeypatch):
    if sources.grep_available() is None:
        pytest.skip("grep not installed")
    started: list[str | None] = []
    real = sources.LastMatches.start

    def start(needles, *, path=None, nice=False):
        started.append(path)
        return real(needles, path=path, nice=nice)

    monkeypatch.setattr(sources.LastMatches, "start", start)
    oom = ("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
           "GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.")
    path = tmp_path / "train.log"
    path.write_text("\n".join([*_retry(3000), oom, *_retry(10, 3000)]) + "\n")
    from trainmedic.triage import triage_paths

    assert triage_paths([str(path)]).findings[0].link.startswith("oom#")
    assert started == []
    path.write_text("\n".join([*_retry(3000), *_error_lines(), *_retry(10, 3000)]) + "\n")
    report = _triage(tmp_path, monkeypatch, path.read_text().splitlines(), "file")
    assert ERROR in report.findings[0].summary and started == [str(tmp_path / "train.log")]


OOM_CASE = "oom/backward_rank1_prefix_axolotl_1717.log"  # a cause: torch's CUDA OOM on rank 1


def _searched_beside(monkeypatch) -> tuple[list, list]:
    """Every plain file searched beside the first pass, as a large one is, unless its last
    64 KiB hold the lines it keeps; returns the searches started on a path, and those
    stopped."""
    monkeypatch.setattr(sources, "EARLY_MIN_BYTES", 0)
    monkeypatch.setattr(sources, "TAIL_PEEK", 64 << 10)
    started: list = []
    stopped: list = []
    real_start, real_stop = sources.LastMatches.start, sources.LastMatches.stop

    def start(needles, *, path=None, nice=False):
        found = real_start(needles, path=path, nice=nice)
        if path is not None and found is not None:
            started.append(found)
        return found

    def stop(self):
        stopped.append(self)
        real_stop(self)

    monkeypatch.setattr(sources.LastMatches, "start", start)
    monkeypatch.setattr(sources.LastMatches, "stop", stop)
    return started, stopped


def _gone(search) -> bool:
    """No process of the search's pipeline, nor of its process groups, is left."""
    from trainmedic import children

    for proc in search.procs:
        if proc.returncode is None or proc.pid in children.running():
            return False
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True


@pytest.mark.parametrize("megatron", [False, True])
def test_a_large_file_with_no_cause_is_searched_beside_the_first_pass(tmp_path, monkeypatch,
                                                                       megatron):
    """The lines left aside come from the search begun with the scan: the file is not read a
    third time, and the error far before the end is still the one reported."""
    if sources.grep_available() is None:
        pytest.skip("grep not installed")
    started, stopped = _searched_beside(monkeypatch)
    head = [ITERATION.format(i) for i in range(1, 200)] if megatron else []
    lines = [*head, *_retry(2000), *_error_lines(), *_chatter(30000)]
    report = _triage(tmp_path, monkeypatch, lines, "file")
    (guess,) = report.findings
    assert ERROR in guess.summary and guess.evidence[0].line == _line_of(lines)
    assert len(started) == 1 and stopped == []  # one search, read to its end, not stopped
    assert _gone(started[0])
    if megatron:
        assert report.loss.count == 199


def test_the_search_beside_is_stopped_once_a_cause_is_found(tmp_path, monkeypatch):
    if sources.grep_available() is None:
        pytest.skip("grep not installed")
    started, stopped = _searched_beside(monkeypatch)
    case = read_case(CORPUS / "cases" / OOM_CASE)
    assert case.split == "tune"
    path = tmp_path / "train.log"
    path.write_text("\n".join([*_retry(3000), *case.excerpt.splitlines(), *_chatter(30000)])
                    + "\n")
    from trainmedic.triage import triage_paths

    report = triage_paths([str(path)])
    assert report.findings[0].link.startswith("oom#") and report.findings[0].kind == "cause"
    assert len(started) == 1 and stopped == started  # stopped, not read
    assert _gone(started[0])


def test_a_large_file_whose_end_holds_the_lines_kept_is_not_searched(tmp_path, monkeypatch):
    """A retry loop up to the end: the lines left aside that would be kept are all in the last
    64 KiB, read there (no search of the whole file), and numbered right."""
    if sources.grep_available() is None:
        pytest.skip("grep not installed")
    started, _stopped = _searched_beside(monkeypatch)
    # the error among the last error-word lines that are kept
    lines = [*_chatter(30000), *_retry(300), *_error_lines(), *_retry(200, 300)]
    report = _triage(tmp_path, monkeypatch, lines, "file")
    (guess,) = report.findings
    assert ERROR in guess.summary and guess.evidence[0].line == _line_of(lines)
    assert started == []


@pytest.mark.parametrize("ending", [b"\n", b""])
def test_the_end_of_a_file_gives_what_grep_cut_and_tail_give(tmp_path, ending):
    """Line breaks, carriage returns (one followed by digits and a colon), lines longer than
    the cut, a last line without a line break: the lines read at the end of the file are
    exactly those of `grep -n | cut | tail`."""
    if None in (sources.grep_available(), sources.shutil.which("cut"),
                sources.shutil.which("tail"), sources.shutil.which("wc")):
        pytest.skip("grep, cut, tail or wc not installed")
    scanner = Scanner()
    retry = [line.encode() for line in _retry(400)]
    odd = [b"x" * 100 + b"Error" + b"y" * sources.SIDE_CUT,  # longer than the cut
           b"RuntimeError: one\r12:Error two\rthree",  # read as grep's output is
           b"Exception" * 3]
    body = [*(c.encode() for c in _chatter(20000)), *retry[:300], *odd, *retry[300:]]
    path = tmp_path / "train.log"
    path.write_bytes(b"\n".join(body) + ending)
    at_end, count = sources._TailMatches.peek(str(path), scanner._errors_b)
    assert at_end is not None and count == 403
    searched = sources.LastMatches.start(scanner.error_needles, path=str(path))
    assert searched is not None
    expected = searched.result()
    assert expected and (12, b"Error two") in expected  # the carriage return's quirk
    assert at_end.result() == expected
    # fewer such lines at the end than are kept, or none (those before it are not counted)
    chatter = [c.encode() for c in _chatter(60000)]  # more than TAIL_PEEK bytes
    path.write_bytes(b"\n".join([*chatter, *retry[:10]]) + ending)
    assert sources._TailMatches.peek(str(path), scanner._errors_b) == (None, 10)
    path.write_bytes(b"\n".join([*retry[:10], *chatter]) + ending)
    assert sources._TailMatches.peek(str(path), scanner._errors_b) == (None, 0)


def test_a_large_file_with_an_error_at_its_end_is_searched_after_the_first_pass(tmp_path,
                                                                              monkeypatch):
    """A few error lines at the end: a cause is likely found there, so no search starts beside
    the first pass; none was found, and the file is searched once, after it."""
    if sources.grep_available() is None:
        pytest.skip("grep not installed")
    started, _stopped = _searched_beside(monkeypatch)
    lines = [*_chatter(30000), *_retry(20), *_error_lines(), *_chatter(20)]
    report = _triage(tmp_path, monkeypatch, lines, "file")
    (guess,) = report.findings
    assert ERROR in guess.summary and guess.evidence[0].line == _line_of(lines)
    assert len(started) == 1 and _gone(started[0])
