"""The end of a plain file, numbered: the same numbers whether wc or Python counts the file's
line breaks, and none for a file that changed after its end was read."""

from __future__ import annotations

import pytest

from trainmedic.triage import fileend
from trainmedic.triage.fileend import FileEnd


def _numbered(end: FileEnd) -> list[tuple[int, bytes]]:
    first = end.first_line()
    assert first is not None
    return list(enumerate(end.block.split(b"\n"), first))


@pytest.mark.parametrize("counter", ["wc", "python"])
def test_the_lines_at_a_files_end_keep_their_numbers(tmp_path, monkeypatch, counter):
    if counter == "wc" and fileend.shutil.which("wc") is None:
        pytest.skip("wc not installed")
    if counter == "python":
        monkeypatch.setattr(fileend.shutil, "which", lambda _name: None)
    path = tmp_path / "big.log"
    lines = [f"line {i}" + "\r" * (i % 3) for i in range(1, 40001)]  # > WC_MIN_BYTES
    path.write_bytes("\n".join(lines).encode())  # the last line has no line break
    end = FileEnd.read(str(path), 4096)
    assert end is not None and end.offset > 0 and path.stat().st_size > fileend.WC_MIN_BYTES
    numbered = _numbered(end)[1:]  # the first piece starts inside a line
    assert numbered[-1] == (40000, lines[-1].encode())
    assert all(text == lines[n - 1].encode() for n, text in numbered)


def test_a_small_file_read_whole_starts_at_line_one(tmp_path):
    path = tmp_path / "small.log"
    path.write_bytes(b"a\nb\n")
    end = FileEnd.read(str(path), 4096)
    assert end is not None and end.offset == 0 and _numbered(end)[:2] == [(1, b"a"), (2, b"b")]


def test_a_file_that_grew_after_its_end_was_read_is_not_numbered(tmp_path):
    path = tmp_path / "live.log"
    path.write_bytes(b"x\n" * 1000)
    end = FileEnd.read(str(path), 100)
    assert end is not None
    with path.open("ab") as handle:
        handle.write(b"one more\n")
    assert end.first_line() is None
    assert FileEnd.read(str(path / "nope"), 100) is None


def test_an_end_without_its_bytes_numbers_its_lines_the_same(tmp_path):
    """`_TailMatches` keeps a few lines until the scan ends, not the 4 MiB they came from."""
    path = tmp_path / "big.log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 50001)))
    end = FileEnd.read(str(path), 4096)
    assert end is not None and end.offset > 0
    light = end.without_block()
    assert light.block == b"" and light.breaks == end.block.count(b"\n")
    assert light.first_line() == end.first_line() == 50001 - end.block.count(b"\n")
