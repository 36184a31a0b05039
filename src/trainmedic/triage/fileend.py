"""The end of a plain file, with the real numbers of its lines.

Two readers want a log's last lines numbered: the quiet log's last error lines (`sources`) and
`--symptom`'s look at how a log ends (`symptom`). Both read only the end, from the end; numbering
it takes the count of the line breaks before it, which no pass has at hand (grep's first pass
prints only the lines it matches). So the whole file's line breaks are counted once, when the
numbers are asked for: by `wc -l` (C, at memory speed) for a large file, in Python for a small
one or where wc is missing.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from trainmedic import children

CHUNK = 1 << 20
WC_MIN_BYTES = 256 << 10  # below this, counting in Python costs less than starting wc


@dataclass(frozen=True)
class FileEnd:
    """The last bytes of a plain file as read from its end."""

    path: str
    size: int  # the file's size when its end was read
    offset: int  # where `block` starts in the file: 0 when it holds the whole file
    block: bytes
    breaks: int  # line breaks in the block as read (kept by `without_block`)

    @classmethod
    def read(cls, path: str, most: int) -> FileEnd | None:
        """The last `most` bytes; None when the file cannot be read or shrank while read."""
        try:
            with open(path, "rb") as stream:
                size = os.fstat(stream.fileno()).st_size
                offset = max(0, size - most)
                stream.seek(offset)
                block = stream.read(most)
        except OSError:
            return None
        if offset + len(block) != size:
            return None
        return cls(path, size, offset, block, block.count(b"\n"))

    def without_block(self) -> FileEnd:
        """The same end, still able to number its lines, without holding its bytes: a reader
        that keeps a few of its lines until the scan ends does not keep megabytes with them."""
        return FileEnd(self.path, self.size, self.offset, b"", self.breaks)

    def first_line(self) -> int | None:
        """The number of the line `block` starts in (when `offset` cuts a line, that line's);
        None when the file changed since its end was read (a log still being written: these
        bytes are no longer its end) or cannot be read."""
        if self.offset == 0:
            return 1
        breaks = line_breaks(self.path, self.size)
        if breaks is None:
            return None
        return breaks - self.breaks + 1


def line_breaks(path: str, size: int) -> int | None:
    """How many line breaks the file holds; None when its size is no longer `size` or it cannot
    be read."""
    try:
        if os.path.getsize(path) != size:
            return None
        wc = shutil.which("wc") if size >= WC_MIN_BYTES else None
        count = _by_wc(wc, path, size) if wc is not None else _by_python(path)
        if os.path.getsize(path) != size:
            return None
    except OSError:
        return None
    return count


def _by_wc(wc: str, path: str, size: int) -> int | None:
    """`wc -l` counts line breaks, as bytes; in Python when it cannot start."""
    try:
        done = children.run([wc, "-l", "--", path], 60.0 + size / 200e6,
                            env=dict(os.environ, LC_ALL="C"))
    except OSError:
        return _by_python(path)
    count = done.stdout.split(maxsplit=1)[:1]
    if done.returncode != 0 or not count or not count[0].isdigit():
        return None
    return int(count[0])


def _by_python(path: str) -> int:
    count = 0
    with open(path, "rb") as stream:
        while chunk := stream.read(CHUNK):
            count += chunk.count(b"\n")
    return count
