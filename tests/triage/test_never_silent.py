"""A log with an error is never called clean: exit codes, guesses, --fail-on, unreadable input.

Log lines come from the public corpus (tests/corpus, tune cases; source URL on each case's
first line) or the fixtures.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainmedic.cli import main
from trainmedic.errors import UsageError
from trainmedic.trees.forest import Forest
from trainmedic.triage import triage_paths, triage_text
from trainmedic.triage.scanner import Scanner
from trainmedic.triage.signatures import compile_forest
from trainmedic.triage.sources import Source
from trainmedic.triage.unmatched import classify

from .conftest import FIXTURES

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import load_cases, read_case  # noqa: E402

CASES = CORPUS / "cases"


def excerpt(relative: str) -> str:
    case = read_case(CASES / relative)
    assert case.split == "tune"  # unit tests read tune cases only
    return case.excerpt


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# a Python traceback, a CUDA error, an NCCL WARN and a crash, none of them matched by any
# signature of today's built-in trees (their trees are being written)
UNKNOWN = [
    "data-pipeline/megatron_indexed_dataset_pointer_overflow_offset_1672.log",
    "containers/cuda_802_system_not_ready_bandwidthtest_pytorch_35710.log",
    "containers/dev_shm_extend_failed_nccl_tests_166.log",
    "data-pipeline/worker_segfault_regression_torch180_53894.log",
]


@pytest.mark.parametrize("relative", UNKNOWN)
def test_an_error_is_never_no_known_failure_with_exit_zero(tmp_path, capsys, relative):
    path = write(tmp_path, "train.log", excerpt(relative))
    code = main(["triage", path])
    out = capsys.readouterr().out
    assert code == 1
    assert "No known failure signature" not in out


@pytest.mark.parametrize(("relative", "needle"), [
    ("containers/ucx_ibv_create_cq_enomem_container_memlock_cudf_spark_7632.log",
     "ERROR mlx5_0: ibv_create_cq() failed"),
    ("checkpoint/enospc_torch_save_dolly_139.log", "ERROR [__main__] main failed"),
])
def test_a_line_at_a_loggers_error_level_alone_is_never_clean(tmp_path, capsys, relative,
                                                              needle):
    """A logger's ERROR level with no other error word on the line (UCX, Python logging)."""
    line = next(x for x in excerpt(relative).splitlines() if needle in x)
    code = main(["triage", write(tmp_path, "train.log", line + "\n")])
    out = capsys.readouterr().out
    assert code == 1 and "No known failure signature" not in out, out


def test_every_corpus_excerpt_with_an_error_gets_a_finding():
    """Holdout cases too: only triage reads them, nothing here looks at their text."""
    silent = []
    for case in load_cases():
        if case.healthy:
            continue
        if not any(classify(line) for line in case.excerpt.splitlines()):
            continue
        if not triage_text(case.excerpt).findings:
            silent.append(case.name)
    assert silent == []


def test_guess_names_the_exception_where_it_was_raised_and_the_rank():
    """With no signature at all, a traceback still gives a finding: a guess."""
    text = "\n".join(f"[rank3]: {line}" for line in
                     excerpt("sharding/fsdp_flatparameter_uniform_requires_grad_peft_transformers_27542.log")
                     .splitlines())
    scanner = Scanner(use_grep=False, signatures=compile_forest(Forest()))
    scanner.scan(Source(name="rank3.log", data=text.encode()))
    scanner.finish()
    from trainmedic.triage.ranking import build_findings

    (guess,) = build_findings(scanner)
    assert guess.guess and guess.kind == "guess" and guess.confidence < 0.5
    assert "ValueError: `FlatParameter` requires uniform `requires_grad`" in guess.summary
    assert "raised at" in guess.summary and ".py:" in guess.summary
    assert guess.ranks == [3]


def test_guess_picks_a_tree_from_the_words_of_the_error():
    text = excerpt("containers/dev_shm_extend_failed_nccl_tests_166.log")
    guess = triage_text(text).findings[0]
    assert guess.kind in ("guess", "cause", "symptom")  # a tree may know it by now
    if guess.guess:
        assert guess.tree != "triage"  # "NCCL", "shared memory" point somewhere specific


def test_healthy_log_exits_zero(capsys):
    assert main(["triage", str(FIXTURES / "nccl_info_noise.log")]) == 0
    assert "No known failure signature" in capsys.readouterr().out


def test_fail_on_levels(tmp_path):
    # a context finding only: 25 fp16 overflow lines at a high scale (the scaler's warm-up
    # search is shorter than that, so they are reported, as context)
    line = next(x for x in (FIXTURES / "apex_overflow.log").read_text().splitlines()
                if "reducing loss scale to 256.0" in x)
    path = write(tmp_path, "fp16.log", "\n".join([line] * 25) + "\n")
    kinds = {f.kind for f in triage_paths([path]).findings}
    assert kinds == {"context"}
    assert main(["triage", path]) == 1
    assert main(["triage", path, "--fail-on", "symptom"]) == 0
    assert main(["triage", path, "--fail-on", "cause"]) == 0
    oom = str(FIXTURES / "oom_fragmentation.log")
    assert main(["triage", oom, "--fail-on", "cause"]) == 1
    watchdog = str(FIXTURES / "watchdog_uniform.log")
    assert main(["triage", watchdog, "--fail-on", "cause"]) == 0  # only symptoms
    assert main(["triage", watchdog, "--fail-on", "symptom"]) == 1


def test_nothing_readable_is_exit_two(tmp_path, capsys):
    empty = write(tmp_path, "empty.log", "")
    assert main(["triage", empty]) == 2
    binary = tmp_path / "core.bin.log"
    binary.write_bytes(b"\x00\x01\x02\x03" * 4096)
    assert main(["triage", str(binary)]) == 2
    err = capsys.readouterr().err
    assert "empty" in err and "binary" in err
    with pytest.raises(UsageError, match="nothing readable as a log"):
        folder = tmp_path / "logs"
        folder.mkdir()
        (folder / "a.log").write_text("")
        (folder / "b.log").write_bytes(b"\x00" * 100)
        triage_paths([str(folder)])


def test_a_frame_is_not_carried_to_a_later_unrelated_exception() -> None:
    """The frame of a traceback a signature matched belongs to that traceback: a later
    exception printed without frames is not said to be raised there."""
    from trainmedic.triage.unmatched import ErrorTracker

    tracker = ErrorTracker()
    tracker.new_source("train.log")
    tracker.add("Traceback (most recent call last):", 1)
    tracker.add('  File "/opt/app/train.py", line 88, in step', 2, frame_only=True)
    tracker.add_covered("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                        3, None, None)
    tracker.add("ValueError: checkpoint directory /ckpt is not empty", 9)
    tracker.finish()
    assert [(e.line, e.kind, e.frame) for e in tracker.uncovered] == [(9, "exception", None)]


def test_the_frame_above_an_exception_is_kept() -> None:
    from trainmedic.triage.unmatched import ErrorTracker

    tracker = ErrorTracker()
    tracker.new_source("train.log")
    tracker.add("Traceback (most recent call last):", 1)
    tracker.add('  File "/opt/app/train.py", line 88, in step', 2, frame_only=True)
    tracker.add("ValueError: checkpoint directory /ckpt is not empty", 3)
    tracker.add("Traceback (most recent call last):", 4)  # a later header is its echo
    tracker.finish()
    assert [(e.line, e.frame) for e in tracker.uncovered] == [(3, "/opt/app/train.py:88 in step")]
