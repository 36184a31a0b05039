"""The `compile-cache` probe: where torch.compile's kernel caches live, and whether that is safe.

Inductor writes to TORCHINDUCTOR_CACHE_DIR (default: <temp dir>/torchinductor_<user>) and puts
Triton's cache in its triton/ subfolder unless TRITON_CACHE_DIR is set; Triton kernels compiled
outside Inductor use ~/.triton/cache. Ranks of many nodes writing one of those on NFS or Lustre
race on renames, and a full /tmp or home quota fails the compile. Nothing is run: the paths
come from the environment, the file system type from /proc/self/mountinfo.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from trainmedic.probes import procfs
from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult

NAME = "compile-cache"
GIB = 1024**3
LOW_FREE_GIB = 2.0
NETWORK_FS = {
    "nfs", "nfs4", "lustre", "gpfs", "beegfs", "cifs", "smb3", "ceph", "glusterfs", "panfs",
    "wekafs", "9p", "fuse.sshfs", "fuse.gcsfuse", "fuse.s3fs", "fuse.juicefs", "fuse.glusterfs",
    "fuse.ceph", "fuse.lustre",
}


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (\\040...)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def parse_mountinfo(text: str) -> list[tuple[str, str]]:
    """(mount point, file system type) of every line of /proc/<pid>/mountinfo."""
    mounts = []
    for line in text.splitlines():
        if line.startswith("#") or " - " not in line:
            continue
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or not tail:
            continue
        mounts.append((_unescape(fields[4]), tail[0]))
    return mounts


def fs_type(path: str, mounts: list[tuple[str, str]]) -> str:
    """The type of the file system holding `path` (the longest mount point that prefixes it)."""
    best, kind = -1, ""
    for point, fstype in mounts:
        prefix = point.rstrip("/") + "/"
        if (path == point or path.startswith(prefix) or point == "/") and len(point) > best:
            best, kind = len(point), fstype
    return kind


def nearest_existing(path: str) -> str:
    current = os.path.abspath(path)
    while not os.path.exists(current) and os.path.dirname(current) != current:
        current = os.path.dirname(current)
    return os.path.realpath(current)


def cache_dirs(env: Mapping[str, str], tmp: str, home: str, user: str) -> dict[str, str]:
    inductor = env.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(tmp, f"torchinductor_{user}")
    dirs = {"inductor": inductor,
            "triton": env.get("TRITON_CACHE_DIR") or os.path.join(inductor, "triton")}
    if not env.get("TRITON_CACHE_DIR"):
        dirs["triton (outside Inductor)"] = os.path.join(home, ".triton", "cache")
    return dirs


def examine(dirs: dict[str, str], mounts: list[tuple[str, str]]) -> ProbeResult:
    lines, network, writable, frees = [], [], True, []
    kinds: dict[str, str] = {}
    for label, path in dirs.items():
        existing = nearest_existing(path)
        kind = fs_type(existing, mounts) or "unknown"
        kinds[label] = kind
        try:
            st = os.statvfs(existing)
            free = st.f_bavail * st.f_frsize / GIB
            frees.append(free)
            free_text = f"{free:,.1f} GiB free"
        except OSError:
            free_text = "free space unknown"
        ok = os.access(existing, os.W_OK)
        writable = writable and ok
        if kind in NETWORK_FS:
            network.append(label)
        lines.append(f"{label}: {path} on {kind}, {free_text}" + ("" if ok else ", NOT writable"))
    facts: dict[str, object] = {
        "inductor_dir": dirs["inductor"],
        "inductor_fs": kinds["inductor"],
        "triton_dir": dirs["triton"],
        "network_fs": bool(network),
        "writable": writable,
    }
    if frees:
        facts["min_free_gib"] = round(min(frees), 2)
    detail = "; ".join(lines)
    evidence = {fact: detail for fact in facts}
    if network:
        evidence["network_fs"] = (f"{', '.join(network)} cache on a network file system "
                                  f"({', '.join(kinds[n] for n in network)}): ranks of several "
                                  "nodes writing it race; use node-local disk")
    problems = []
    if network:
        problems.append("on a network file system")
    if frees and min(frees) < LOW_FREE_GIB:
        problems.append(f"only {min(frees):.1f} GiB free")
    if not writable:
        problems.append("not writable")
    summary = detail + ("; " + ", ".join(problems) if problems else "")
    return ProbeResult(NAME, "warn" if problems else "ok", summary, facts, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    dirs = cache_dirs(os.environ, tempfile.gettempdir(), os.path.expanduser("~"), user)
    mountinfo = procfs.read_text(Path("/proc/self/mountinfo")) or ""
    return examine(dirs, parse_mountinfo(mountinfo))
