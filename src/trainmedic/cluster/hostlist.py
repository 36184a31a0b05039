"""Slurm hostlist expressions (`node[01-16],gpu-a7`), expanded and compressed without Slurm.

The fan-out needs the node names of a `SLURM_JOB_NODELIST` or of a user's spec on a login node
where `scontrol show hostnames` may be missing, and the report names groups of nodes compactly.
Syntax (as Slurm documents it): hosts separated by commas or whitespace; a bracket holds numeric
ranges and single numbers (`tux[0-5,12,20-25]`); the width of a range's first number is kept, so
`node[01-10]` gives `node01` .. `node10`; several brackets multiply (`rack[0-1]_blade[0-2]`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from trainmedic.errors import UsageError

# Slurm itself refuses ranges above 64K hosts; a bigger spec is a typo, not a cluster.
MAX_HOSTS = 65536

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")


def _split_top_level(spec: str) -> Iterator[str]:
    """Split on commas/whitespace that are outside brackets; brackets must balance."""
    depth = 0
    item: list[str] = []
    for ch in spec:
        if ch == "[":
            if depth:
                raise UsageError(f"bad hostlist {spec!r}: nested '['")
            depth = 1
        elif ch == "]":
            if not depth:
                raise UsageError(f"bad hostlist {spec!r}: ']' without '['")
            depth = 0
        elif depth == 0 and (ch == "," or ch.isspace()):
            if item:
                yield "".join(item)
                item = []
            continue
        item.append(ch)
    if depth:
        raise UsageError(f"bad hostlist {spec!r}: '[' is never closed")
    if item:
        yield "".join(item)


def _bracket_values(body: str, spec: str) -> list[str]:
    """`01-03,7` -> ['01', '02', '03', '7'] (the width of each range's start is kept)."""
    values: list[str] = []
    for part in body.split(","):
        match = _RANGE.match(part.strip())
        if not match:
            raise UsageError(f"bad hostlist {spec!r}: {part!r} is not a number or range N-M")
        start_text, end_text = match.group(1), match.group(2)
        if end_text is None:
            values.append(start_text)
            continue
        start, end = int(start_text), int(end_text)
        if end < start:
            raise UsageError(f"bad hostlist {spec!r}: range {part!r} runs backwards")
        if end - start + 1 > MAX_HOSTS:
            raise UsageError(f"bad hostlist {spec!r}: range {part!r} is over {MAX_HOSTS} hosts")
        width = len(start_text)
        values.extend(f"{n:0{width}d}" for n in range(start, end + 1))
    return values


def _expand_item(item: str, spec: str) -> list[str]:
    """One host pattern, possibly with several brackets, as the list of names it stands for."""
    names = [""]
    rest = item
    while rest:
        open_at = rest.find("[")
        if open_at < 0:
            names = [n + rest for n in names]
            break
        close_at = rest.index("]", open_at)
        literal, body = rest[:open_at], rest[open_at + 1 : close_at]
        if not body.strip():
            raise UsageError(f"bad hostlist {spec!r}: empty brackets")
        values = _bracket_values(body, spec)
        if len(names) * len(values) > MAX_HOSTS:
            raise UsageError(f"bad hostlist {spec!r}: more than {MAX_HOSTS} hosts")
        names = [n + literal + v for n in names for v in values]
        rest = rest[close_at + 1 :]
    return names


def expand(spec: str, *, unique: bool = True) -> list[str]:
    """Expand a hostlist expression into host names, in order (duplicates dropped by default).

    Raises UsageError with a one-line reason for an empty or malformed spec, or one naming more
    than MAX_HOSTS hosts.
    """
    if not spec or not spec.strip():
        raise UsageError("empty hostlist")
    hosts: list[str] = []
    for item in _split_top_level(spec):
        hosts.extend(_expand_item(item, spec))
        if len(hosts) > MAX_HOSTS:
            raise UsageError(f"bad hostlist {spec!r}: more than {MAX_HOSTS} hosts")
    if not hosts:
        raise UsageError(f"empty hostlist {spec!r}")
    for host in hosts:
        # ssh and pdsh would read "-oProxyCommand=..." as an option and run it locally
        if host.startswith("-"):
            raise UsageError(f"bad hostlist {spec!r}: host {host!r} starts with '-'")
        # `$(...)`, `;`, quotes or spaces in a name reach ssh's ProxyCommand `%h`
        if not valid_host(host):
            raise UsageError(f"bad hostlist {spec!r}: {host!r} is not a host name (RFC 1123: "
                             "letters, digits, '-' inside a label, '.' between labels; "
                             "'_' is allowed for Slurm node names)")
    if unique:
        hosts = list(dict.fromkeys(hosts))
    return hosts


_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def valid_host(host: str) -> bool:
    """RFC 1123 host names (and IPv4 addresses), with `_` allowed as Slurm allows it."""
    if not host or len(host) > 253:
        return False
    return all(_LABEL.fullmatch(label) for label in host.removesuffix(".").split("."))


def _runs(numbers: list[str]) -> list[str]:
    """Numeric strings of one prefix/suffix -> `a-b` / `a` parts, keeping zero padding."""
    ordered = sorted(set(numbers), key=lambda s: (int(s), len(s)))
    parts: list[str] = []
    start = prev = ordered[0]
    for text in ordered[1:]:
        width = len(start)
        if int(text) == int(prev) + 1 and f"{int(text):0{width}d}" == text:
            prev = text
            continue
        parts.append(start if start == prev else f"{start}-{prev}")
        start = prev = text
    parts.append(start if start == prev else f"{start}-{prev}")
    return parts


def compress(hosts: Iterable[str]) -> str:
    """The shortest common form Slurm prints: `node[01-16],gpu-a7` (groups in first-seen order).

    Only the last number of each name is ranged, as `scontrol show hostlist` does.
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for host in dict.fromkeys(hosts):
        match = _TRAILING_NUMBER.match(host)
        if match:
            groups.setdefault((match.group(1), match.group(3)), []).append(match.group(2))
        else:
            groups.setdefault((host, "\0"), [])
    out: list[str] = []
    for (prefix, suffix), numbers in groups.items():
        if suffix == "\0":
            out.append(prefix)
            continue
        parts = _runs(numbers)
        if len(parts) == 1 and "-" not in parts[0]:
            out.append(f"{prefix}{parts[0]}{suffix}")
        else:
            out.append(f"{prefix}[{','.join(parts)}]{suffix}")
    return ",".join(out)
