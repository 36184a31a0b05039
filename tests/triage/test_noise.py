"""Real lines in hostile wrappers: ANSI colours, progress bars, CRLF, bad bytes, truncation.

The wrappers are applied in the test to verbatim lines from the fixtures (sources on their
line 1); the bytes around them are synthetic.
"""

from __future__ import annotations

import gzip

import pytest

from trainmedic.errors import UsageError
from trainmedic.triage import triage_paths

from .conftest import FIXTURES

OOM = (FIXTURES / "oom_fragmentation.log").read_bytes().splitlines()[1]
WATCHDOG = (FIXTURES / "watchdog_mismatch.log").read_bytes().splitlines()[1:]
NOISE = (FIXTURES / "nccl_info_noise.log").read_bytes().splitlines()[1:]


def scan(tmp_path, data: bytes, use_grep: bool, name: str = "train.log"):
    path = tmp_path / name
    path.write_bytes(data)
    return triage_paths([str(path)], use_grep=use_grep)


def test_ansi_colour_codes(tmp_path, use_grep):
    data = b"\n".join(NOISE) + b"\n\x1b[1;31m" + OOM + b"\x1b[0m\n"
    report = scan(tmp_path, data, use_grep)
    top = report.findings[0]
    assert top.link == "oom#when"
    assert "\x1b" not in top.evidence[0].text
    assert top.evidence[0].line == len(NOISE) + 1


def test_progress_bar_carriage_returns(tmp_path, use_grep):
    bar = b"".join(b" %2d%%|##      | %d/200 [00:01<00:20]\r" % (i, i) for i in range(40))
    data = bar + b"[rank0]: RuntimeError: CUDA error: device-side assert triggered\n" + bar + b"\n"
    report = scan(tmp_path, data, use_grep)
    assert [f.link for f in report.findings] == ["startup#device-assert"]
    ev = report.findings[0].evidence[0]
    assert ev.line == 1 and ev.text.startswith("[rank0]: RuntimeError")


def test_crlf_line_endings(tmp_path, use_grep):
    data = b"\r\n".join([*NOISE, OOM, *NOISE]) + b"\r\n"
    report = scan(tmp_path, data, use_grep)
    assert report.findings[0].evidence[0].line == len(NOISE) + 1
    assert not report.findings[0].evidence[0].text.endswith("\r")


def test_non_utf8_bytes(tmp_path, use_grep):
    data = b"\xff\xfe\x00garbage\x80\x81\n" + OOM.replace(b"GPU 0", b"GPU\xc3\x28 0") + b"\n"
    report = scan(tmp_path, data, use_grep)
    assert report.findings[0].signature == "cuda-oom"
    assert "\ufffd" in report.findings[0].evidence[0].text


def test_truncated_last_line(tmp_path, use_grep):
    data = b"\n".join(NOISE) + b"\n" + OOM[:60]  # cut mid-message, no newline
    report = scan(tmp_path, data, use_grep)
    assert report.findings[0].signature == "cuda-oom"
    assert report.findings[0].evidence[0].line == len(NOISE) + 1


def test_interleaved_ranks_in_one_file(tmp_path, use_grep):
    lines = []
    for i, w in enumerate(WATCHDOG):
        lines.append(NOISE[i % len(NOISE)])
        lines.append(w)
    report = scan(tmp_path, b"\n".join(lines) + b"\n", use_grep)
    assert report.findings[0].signature == "rank-mismatch"
    assert report.findings[0].ranks == [7]


def test_empty_file_is_not_a_clean_bill(tmp_path, use_grep):
    with pytest.raises(UsageError, match=r"train\.log: empty"):
        scan(tmp_path, b"", use_grep)


def test_folder_without_a_log_is_an_error_not_a_clean_bill(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"\0" * 16)  # checkpoints are skipped
    (tmp_path / ".hidden.log").write_bytes(OOM + b"\n")  # hidden entries are skipped
    with pytest.raises(UsageError, match="no readable log file"):
        triage_paths([str(tmp_path)])


def test_gz_and_truncated_gz(tmp_path):
    path = tmp_path / "rank5.log.gz"
    path.write_bytes(gzip.compress(b"\n".join([*NOISE, OOM]) + b"\n"))
    report = triage_paths([str(path)])
    assert report.findings[0].ranks == [5]  # rank from the file name
    broken = tmp_path / "broken.log.gz"
    broken.write_bytes(path.read_bytes()[:40])
    with pytest.raises(UsageError, match=r"broken\.log\.gz: cannot read"):
        triage_paths([str(broken)])


def test_folder_with_thousands_of_files(tmp_path):
    root = tmp_path / "logs"
    for i in range(2500):
        d = root / f"node{i // 500}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"rank{i}.log").write_bytes(b"\n".join(NOISE) + b"\n")
    (root / "node3" / "rank1777.log").write_bytes(b"\n".join([*NOISE, OOM]) + b"\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "rank9999.log").write_bytes(OOM)
    (root / "node0" / "model.safetensors").write_bytes(OOM)
    report = triage_paths([str(root)])
    assert len(report.files) == 2500
    assert [f.ranks for f in report.findings if f.signature == "cuda-oom"] == [[1777]]


def test_missing_path_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        triage_paths([str(tmp_path / "nope.log")])


def test_grep_and_python_prefilters_agree_on_a_mixed_log(tmp_path, monkeypatch):
    from trainmedic.triage import sources

    body = []
    for i in range(3000):
        body.append(NOISE[i % len(NOISE)])
        if i % 7 == 0:
            body.append(b" iteration %8d/ 1000 | lm loss: %.6E | loss scale: 1.0 | grad norm: 0.5 |"
                        % (i, 2.0 + (5.0 if i == 2002 else 0.0)))
    body[1500:1500] = [OOM, *WATCHDOG]
    path = tmp_path / "mixed.log"
    path.write_bytes(b"\r\n".join(body) + b"\r\n")
    monkeypatch.setattr(sources, "GREP_MIN_BYTES", 0)
    with_grep = triage_paths([str(path)], use_grep=True).to_dict()
    without = triage_paths([str(path)], use_grep=False).to_dict()
    assert with_grep == without
    assert with_grep["findings"] and with_grep["loss"]["count"] > 400


def test_giant_progress_bar_line_is_read_in_bounded_pieces(tmp_path, use_grep, monkeypatch):
    from trainmedic.triage import sources

    monkeypatch.setattr(sources, "MAX_LINE", 64 << 10)  # 64 KiB pieces, 1 MiB line
    bar = b"".join(b" %3d%%|####| %d/9999 [00:01<00:20, loss=2.31]\r" % (i % 100, i)
                   for i in range(20000))
    data = bar + b"[rank2]: RuntimeError: CUDA error: device-side assert triggered\r" + bar + b"\n"
    report = scan(tmp_path, data, use_grep)
    assert [f.link for f in report.findings] == ["startup#device-assert"]
    assert report.findings[0].ranks == [2] and report.findings[0].evidence[0].line == 1
