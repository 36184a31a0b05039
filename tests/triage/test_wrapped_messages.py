"""An OOM message hard-wrapped over several lines (a tmux pane, a notebook, a paste into an
issue) is read whole, by the Python prefilter and by grep's alike; lines that only look like its
continuation are left alone.

The wrapped excerpts are tune cases of the public corpus (their source URL is on their first
line); the lines marked "constructed" are written for the test in the shape of the real ones.
"""

from __future__ import annotations

import shutil

import pytest

from trainmedic.triage import triage_paths, triage_text

from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)

BLOOM = "oom/bloom1b1_sft_zero3_v100_oom_deepspeedexamples_389.log"  # old form, wrapped at 80
GPT_OSS = "oom/full_bsv_logits_backward_gpt_oss_automodel_3907.log"  # new form, one field a line


def _oom(report):
    found = [f for f in report.findings if f.link.startswith("oom#")]
    assert found, [f.link for f in report.findings]
    return found[0]


def test_the_old_form_wrapped_at_80_columns_gives_its_sizes_and_reaches_fragmentation() -> None:
    finding = _oom(triage_text(excerpt(BLOOM)))
    assert finding.link == "oom#fragmentation"
    # 25.59 GiB reserved - 23.21 GiB allocated, stated on the two lines below the first
    assert finding.details["unallocated_mib"] == pytest.approx(2.38 * 1024, abs=1)
    assert finding.details["free_mib"] == pytest.approx(2.43 * 1024, abs=1)


def test_the_new_form_one_field_a_line_gives_every_size() -> None:
    details = _oom(triage_text(excerpt(GPT_OSS))).details
    assert {"tried_mib", "total_mib", "free_mib", "allocated_mib",
            "unallocated_mib"} <= details.keys()


@pytest.mark.skipif(shutil.which("grep") is None, reason="needs grep")
def test_grep_keeps_the_continuation_lines(tmp_path) -> None:
    log = tmp_path / "train.log"
    # large enough to be read the way a large log is: grep picks the candidate lines
    log.write_text("step ok\n" * 40000 + excerpt(BLOOM))  # over GREP_MIN_BYTES
    finding = _oom(triage_paths([str(log)], use_grep=True))
    assert finding.link == "oom#fragmentation"
    assert finding.details["unallocated_mib"] == pytest.approx(2.38 * 1024, abs=1)


def test_a_size_line_that_does_not_follow_the_message_is_not_joined() -> None:
    # constructed: the OOM's first line, then an unrelated line, then a line with a size field
    text = ("RuntimeError: CUDA out of memory. Tried to allocate 3.82 GiB (GPU 0; 31.75\n"
            "[INFO] saving the batch that failed\n"
            "GiB total capacity; 23.21 GiB already allocated; 2.43 GiB free; 25.59 GiB\n"
            "reserved in total by PyTorch)\n")
    details = _oom(triage_text(text)).details
    assert "unallocated_mib" not in details and "free_mib" not in details


def test_a_whole_message_on_one_line_is_read_as_before() -> None:
    # constructed in the shape of PyTorch 1.x's message; the next line holds another message's
    # field, which would change the unallocated size (7.30 - 7.20 GiB) if it were joined
    text = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 8.00 GiB "
            "total capacity; 7.20 GiB already allocated; 0 bytes free; 7.30 GiB reserved in "
            "total by PyTorch)\n"
            "and 2.00 GiB is reserved by PyTorch but unallocated\n")
    details = _oom(triage_text(text)).details
    assert details["unallocated_mib"] == pytest.approx(0.10 * 1024, abs=1)
