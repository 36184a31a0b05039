"""TensorBoard event files in pure Python: TFRecord framing and the few protobuf fields needed.

A record is `uint64 length | uint32 masked crc32c(length) | data | uint32 masked crc32c(data)`.
`data` is an `Event`: wall_time (1, double), step (2, int64), summary (5) with repeated `Value`
(1): tag (1, string), simple_value (2, float), tensor (8, `TensorProto`: dtype 1, float_val 5,
double_val 6, tensor_content 4, half_val 13). PyTorch's SummaryWriter and tensorboardX write
simple_value; TF2 and newer writers write a scalar tensor. CRCs are not checked (speed); a
truncated last record (a run that is still writing) ends the file quietly, and so does a record
that cannot be one (a length past MAX_RECORD, a message cut inside a field: text appended to an
event file, a file that only has the name): read as far as it is sound, never a traceback.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, BinaryIO

_DTYPE_FLOAT, _DTYPE_DOUBLE, _DTYPE_HALF, _DTYPE_BF16 = 1, 2, 19, 14
MAX_RECORD = 1 << 26  # an event record of scalars is bytes to kilobytes; more is not a record


def looks_like_tfevents(head: bytes, name: str) -> bool:
    if "tfevents" in name:
        return True
    if len(head) < 13:
        return False
    (length,) = struct.unpack_from("<Q", head, 0)
    return 0 < length < (1 << 24) and head[12] == 0x09  # field 1 (wall_time), fixed64


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of one message; bytes for length-delimited fields."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        val: int | bytes
        if wire == 0:
            val, i = _varint(buf, i)
        elif wire == 1:
            val = buf[i : i + 8]
            i += 8
        elif wire == 2:
            size, i = _varint(buf, i)
            val = buf[i : i + size]
            i += size
        elif wire == 5:
            val = buf[i : i + 4]
            i += 4
        else:
            return  # groups (3/4) are not used by event files
        yield num, wire, val


def _tensor_value(buf: bytes) -> float | None:
    dtype = 0
    content = b""
    for num, wire, val in _fields(buf):
        if num == 1 and wire == 0:
            dtype = int(val)
        elif num == 5:  # float_val: packed (wire 2) or single (wire 5)
            raw = bytes(val)
            if raw:
                return struct.unpack_from("<f", raw)[0]
        elif num == 6:
            raw = bytes(val)
            if raw:
                return struct.unpack_from("<d", raw)[0]
        elif num == 13 and wire == 2:  # half_val, packed varints of the bit pattern
            bits, _ = _varint(bytes(val), 0)
            return struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]
        elif num == 4:
            content = bytes(val)
    if content:
        if dtype == _DTYPE_FLOAT and len(content) >= 4:
            return struct.unpack_from("<f", content)[0]
        if dtype == _DTYPE_DOUBLE and len(content) >= 8:
            return struct.unpack_from("<d", content)[0]
        if dtype == _DTYPE_HALF and len(content) >= 2:
            return struct.unpack_from("<e", content)[0]
        if dtype == _DTYPE_BF16 and len(content) >= 2:
            return struct.unpack("<f", b"\x00\x00" + content[:2])[0]
    return None


def scalars(stream: BinaryIO) -> Iterator[tuple[int, str, float]]:
    """(step, tag, value) of every scalar summary, in file order."""
    read = stream.read
    while True:
        header = read(12)
        if len(header) < 12:
            return
        (length,) = struct.unpack_from("<Q", header, 0)
        if length > MAX_RECORD:
            return  # not a record: what follows is not an event file
        data = read(length)
        if len(data) < length or len(read(4)) < 4:
            return  # truncated record: the writer was still running
        try:
            found = list(_scalars_of(data))
        except (IndexError, struct.error):
            return  # a message cut inside a field: not an event record
        yield from found


def _scalars_of(data: bytes) -> Iterator[tuple[int, str, float]]:
    """The scalars of one Event record; IndexError or struct.error when it is not one."""
    step = 0
    summary = None
    for num, wire, val in _fields(data):
        if num == 2 and wire == 0:
            step = int(val)
            if step >= 1 << 63:
                step -= 1 << 64
        elif num == 5 and wire == 2:
            summary = val
    if summary is None:
        return
    for num, wire, val in _fields(bytes(summary)):
        if num != 1 or wire != 2:
            continue
        tag = ""
        value = None
        for vnum, vwire, vval in _fields(bytes(val)):
            if vnum == 1 and vwire == 2:
                tag = bytes(vval).decode("utf-8", "replace")
            elif vnum == 2 and vwire == 5:
                value = struct.unpack("<f", vval)[0]
            elif vnum == 8 and vwire == 2:
                value = _tensor_value(bytes(vval))
        if tag and value is not None:
            yield step, tag, value
