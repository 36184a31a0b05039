"""Per-line facts that ranking needs: which rank and host printed it, and when.

Only run on candidate lines. Ranks come from launcher prefixes (`[rank3]:`, `[default3]:`,
torchrun/srun -l `3:`, `[3]`, mpirun --tag-output `[1,3]<stderr>:`) or from the message
(`[Rank 3]`, `Rank 3:`); hosts from pdsh/clush `node12: `, `kubectl logs --prefix`
`[pod/NAME/container]` and NCCL's own `host:pid:tid [dev]` prefix; times from the glog prefix
PyTorch uses (`[E1206 18:44:12.715]`, no year), ISO-like stamps (DeepSpeed, Megatron, logging)
or syslog (`Feb 14 05:03:41`). Times without a year get one from `default_year`.
"""

from __future__ import annotations

import re
from datetime import datetime

from trainmedic.textsafe import inert_line

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_PREFIX_RANK = re.compile(
    r"^.{0,40}?\[(?:rank|default)(\d{1,9})\]:|^\s*(\d{1,5}):\s|^\s*\[(\d{1,4})\](?:\s|:)"
    r"|^\[\d{1,9},(\d{1,9})\]<std(?:out|err)>:"
)
# pdsh/clush `node12: ...` (a lower-case name with a digit), kubectl `[pod/NAME/container]`,
# NCCL `host:pid:tid [dev] NCCL ...`
# Lengths are bounded (a DNS label is at most 63 characters, a name at most 253) and the digit
# of the first label is found by a lookahead: `[a-z0-9-]*\d[a-z0-9-]*` tried every split of a
# long run of digits (quadratic, a second per 8 KB line).
_PREFIX_HOST = re.compile(
    r"^(?!rank\d|default\d)(?=[a-z][a-z0-9-]{0,62}(?<=\d))"
    r"([a-z][a-z0-9-]{0,62}(?:\.[a-z0-9-]{1,63}){0,6}): "
    r"|^\[pod/([^/\]\s]{1,253})/[^\]\s]{0,253}\] "
    r"|(?:^|[\s\]:>])([A-Za-z][\w.-]*):\d+:\d+ \[\d+\] (?:[\w/.]+:\d+ )?NCCL "
)
# `[PG ...` is read up to 200 characters (a lazy `[^\]]*?` per "[PG " made one long line quadratic)
_MSG_RANK = re.compile(r"\[(?:PG [^\]]{0,200}?)?Rank (\d{1,9})\]|\bRank (\d{1,9})[:,]"
                       r"|\brank (\d{1,9})\b", re.I)
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")
_GLOG = re.compile(r"\[[IWEF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?")
_SYSLOG = re.compile(
    r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) (\d\d):(\d\d):(\d\d)\b"
)
_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


def clean(text: str) -> str:
    """Drop ANSI colour codes (coloured loggers) and the line ending; `segments` splits `\\r`."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text.rstrip("\r\n")


def segments(text: str) -> list[str]:
    """A line rewritten with `\\r` (progress bars) is several lines; CRLF is one."""
    text = text.rstrip("\r")
    if "\r" not in text:
        return [text]
    return [s for s in text.split("\r") if s.strip()]


def line_rank(text: str) -> int | None:
    """The launcher prefix wins over a rank named inside the message."""
    m = _PREFIX_RANK.match(text)
    if m:
        return int(next(g for g in m.groups() if g is not None))
    m = _MSG_RANK.search(text)
    if m:
        return int(next(g for g in m.groups() if g is not None))
    return None


def line_host(text: str) -> str | None:
    """The host a launcher prefix (or NCCL's own prefix) says printed the line."""
    if ":" not in text and "[pod/" not in text:
        return None
    m = _PREFIX_HOST.search(text)
    if m is None:
        return None
    # a kubectl pod name may hold anything but `/`, `]` and spaces: no escape sequence passes
    return inert_line(next(g for g in m.groups() if g is not None)[:200])


def _frac(us: str | None) -> int:
    return int(us.ljust(6, "0")[:6]) if us else 0


def line_time_year(text: str, default_year: int = 2000) -> tuple[datetime | None, bool]:
    """The line's time and whether its format carried a year (glog and syslog do not)."""
    try:
        m = _ISO.search(text)
        if m:
            y, mo, d, h, mi, s, us = m.groups()
            return datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), _frac(us)), True
        m = _GLOG.search(text)
        if m:
            mo, d, h, mi, s, us = m.groups()
            t = datetime(default_year, int(mo), int(d), int(h), int(mi), int(s), _frac(us))
            return t, False
        m = _SYSLOG.search(text)
        if m:
            mon, d, h, mi, s = m.groups()
            return datetime(default_year, _MONTHS[mon], int(d), int(h), int(mi), int(s)), False
    except ValueError:  # 13th month, Feb 30...: not a timestamp after all
        return None, True
    return None, True
