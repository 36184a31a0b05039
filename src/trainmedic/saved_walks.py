"""Saved walks: the record of a walk as it is saved, one JSON file each, listed newest first.

`WalkRecord` is what `WalkSession.record()` writes and what resume, the home screen and the
incident report read; it needs neither the trees nor the walk engine, so the home screen lists
saved walks without loading either. The files live in `state.walks_dir()` and are written
atomically (`state.write_json_atomic`), so a dropped SSH connection loses nothing. Reading never
fails: a file that is not a walk, or one a newer trainmedic wrote, is skipped with the reason.

A walk file is data anyone with write access to the folder may have crafted: every string read
from it is made inert (control characters shown as escapes) before any front end shows it, and
the notes are redacted when it is saved. One process at a time saves a given walk: the first
save takes a lock on its id (held until the process ends), so a second `walk --resume` of the
same walk continues as a copy instead of overwriting the other's steps (`claim_walk`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainmedic.safefile import TEMP_SUFFIX, read_bounded
from trainmedic.state import walks_dir, write_json_atomic
from trainmedic.textsafe import inert_deep, inert_line
from trainmedic.trees.moved import current_ref

if TYPE_CHECKING:
    from trainmedic.probes.base import ProbeContext, ProbeResult
    from trainmedic.triage.attachment import TriageAttachment

VERSION = 1


@dataclass
class StepRecord:
    """One answered question: what was asked, what was chosen, what the probes suggested."""

    node: str  # "tree#node" of the question
    question: str
    answer: int  # 0-based
    answer_text: str
    goto: str  # "tree#node" it led to
    suggested: int | None = None
    evidence: list[str] = field(default_factory=list)
    time: str = ""
    implied: bool = False  # chosen by the log triage that opened the walk, not by a person

    def to_dict(self) -> dict[str, Any]:
        data = {
            "node": self.node, "question": self.question, "answer": self.answer,
            "answer_text": self.answer_text, "goto": self.goto, "suggested": self.suggested,
            "evidence": list(self.evidence), "time": self.time,
        }
        if self.implied:  # only then: walks saved before it read back the same
            data["implied"] = True
        return data

    @classmethod
    def from_dict(cls, data: object) -> StepRecord:
        """ValueError (saying what) when the step lacks its node, answer or target."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a step is {type(data).__name__}, not a mapping")
        node, answer, goto = data.get("node"), data.get("answer"), data.get("goto")
        if not isinstance(node, str) or not isinstance(goto, str):
            raise ValueError("a step without its node or target")
        if not isinstance(answer, int) or isinstance(answer, bool):
            raise ValueError(f"answer {answer!r} of {node} is not a number")
        suggested = data.get("suggested")
        evidence = data.get("evidence")
        return cls(node=current_ref(node), question=str(data.get("question") or ""),
                   answer=answer, answer_text=str(data.get("answer_text") or ""),
                   goto=current_ref(goto),
                   suggested=suggested if isinstance(suggested, int)
                   and not isinstance(suggested, bool) else None,
                   evidence=[str(e) for e in evidence] if isinstance(evidence, list) else [],
                   time=str(data.get("time") or ""), implied=data.get("implied") is True)


@dataclass
class TriedFix:
    """A fix the walk reached and the person said did not help (`n`), and the answer that led
    there, so the report can say "tried X: did not help" and the list can mark that answer."""

    node: str  # "tree#node" of the fix
    title: str
    question: str = ""  # "tree#node" of the question answered just before, "" if none
    answer: int | None = None  # the answer (0-based) that led to the fix
    time: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "title": self.title, "question": self.question,
                "answer": self.answer, "time": self.time}

    @classmethod
    def from_dict(cls, data: object) -> TriedFix | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("node"), str):
            return None
        answer = data.get("answer")
        return cls(current_ref(str(data["node"])), str(data.get("title") or ""),
                   current_ref(str(data.get("question") or "")),
                   answer if isinstance(answer, int) and not isinstance(answer, bool) else None,
                   str(data.get("time") or ""))


@dataclass
class WalkRecord:
    """A walk as it is saved: what `WalkSession.record()` writes and what resume and the
    incident report read.

    `from_dict` never raises: it reads walks saved by every version so far and anything a
    person edited; what it had to drop that resuming needs is listed in `problems` (not
    saved), so a resume can refuse the walk while a report still renders it.
    """

    id: str
    tree: str
    current: str
    started: str = ""
    updated: str = ""
    finished: bool = False
    steps: list[StepRecord] = field(default_factory=list)
    stack: list[str] = field(default_factory=list)
    probes: list[ProbeResult] = field(default_factory=list)
    triage: TriageAttachment | None = None
    launch_command: str = ""
    notes: str = ""
    tried: list[TriedFix] = field(default_factory=list)
    version: int = VERSION
    problems: list[str] = field(default_factory=list, compare=False)

    @property
    def worth_keeping(self) -> bool:
        """A walk that answered nothing, holds no triage or launch command and tried no fix says
        nothing: a file of it would only crowd the list of walks to resume and report."""
        return bool(self.steps or self.triage is not None or self.tried
                    or self.launch_command.strip())

    def probe_context(self) -> ProbeContext:
        """What the probes may know from this walk (the launch command, for the memory probe)."""
        from trainmedic.probes.base import ProbeContext

        return ProbeContext(launch_command=self.launch_command)

    def to_dict(self) -> dict[str, Any]:
        from trainmedic.redact import redact_text

        return {
            "version": self.version, "id": self.id, "tree": self.tree, "started": self.started,
            "updated": self.updated, "current": self.current, "finished": self.finished,
            "steps": [s.to_dict() for s in self.steps], "stack": list(self.stack),
            "probes": [p.to_dict() for p in self.probes],
            "triage": self.triage.to_dict() if self.triage is not None else None,
            # Saved walks live in the home folder, often shared: no token leaves in them.
            "launch_command": redact_text(self.launch_command),
            "notes": redact_text(self.notes),
            **({"tried": [t.to_dict() for t in self.tried]} if self.tried else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WalkRecord:
        from trainmedic.probes.base import ProbeResult
        from trainmedic.triage.attachment import TriageAttachment

        clean = inert_deep(dict(data))  # shown by every front end: no escape sequence in it
        assert isinstance(clean, dict)
        data = clean
        problems: list[str] = []
        version = data.get("version", VERSION)
        if version != VERSION:
            problems.append(f"unsupported version {version!r}")
        current = data.get("current")
        if not isinstance(current, str):
            problems.append("malformed (no current node)")
            current = ""
        steps: list[StepRecord] = []
        raw_steps = data.get("steps")
        if not isinstance(raw_steps, list):
            problems.append(f"malformed (steps is {type(raw_steps).__name__}, not a list)")
            raw_steps = []
        for i, raw in enumerate(raw_steps, start=1):
            try:
                steps.append(StepRecord.from_dict(raw))
            except ValueError as exc:
                problems.append(f"malformed (step {i}: {exc})")
        stack = data.get("stack") or []
        if not isinstance(stack, list):
            problems.append(f"malformed (stack is {type(stack).__name__}, not a list)")
            stack = []
        probes = data.get("probes")
        # One hand-edited probe entry must not crash the screen that reads them: dropped.
        results = [ProbeResult.from_dict(p) for p in probes if isinstance(p, Mapping)] \
            if isinstance(probes, list) else []
        raw_tried = data.get("tried")
        tried = [t for t in map(TriedFix.from_dict, raw_tried) if t is not None] \
            if isinstance(raw_tried, list) else []
        walk_id = data.get("id")
        tree = data.get("tree")
        return cls(
            id=walk_id if isinstance(walk_id, str) else "?",
            tree=tree if isinstance(tree, str) and tree else current.partition("#")[0],
            current=current_ref(current), started=str(data.get("started") or ""),
            updated=str(data.get("updated") or ""), finished=data.get("finished") is True,
            steps=steps, stack=[current_ref(str(s)) for s in stack],
            probes=[r for r in results if r is not None],
            triage=TriageAttachment.from_dict(data.get("triage")),
            launch_command=str(data.get("launch_command") or ""),
            notes=str(data.get("notes") or ""), tried=tried,
            version=version if isinstance(version, int) else VERSION, problems=problems,
        )


STALE_TEMP_S = 3600.0  # a temporary file this old was left by a killed writer
MAX_WALK_BYTES = 16 << 20  # a walk is a few KB; a bigger file is not one of ours
# A walk id names its file: no separators, no leading dot, nothing a shell or Windows dislikes.
WALK_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


EMPTY_WALK_S = 600.0  # an empty walk this old (saved by an older version) is removed
LOCKS_FILE = ".locks"  # one byte-range lock per walk id, in one file that never grows
_locks: dict[Path, int] = {}  # walks folder -> its locks file, open for the life of the process
_held: set[tuple[Path, str]] = set()  # (folder, walk id) whose lock this process holds


class WalkBusy(OSError):
    """Another trainmedic process is saving this walk."""


def _lock_offset(walk_id: str) -> int:
    return zlib.crc32(walk_id.encode("utf-8")) + 1  # 1 .. 2**32: a byte of a sparse range


def claim_walk(walk_id: str) -> bool:
    """Take the save lock of a walk for this process: False when another process holds it.

    Best effort where locking is impossible (no `fcntl`, a folder that cannot be written): the
    save then reports its own failure. POSIX record locks end with the process, so a killed
    trainmedic never leaves a walk locked.
    """
    folder = walks_dir()
    if (folder, walk_id) in _held:
        return True
    try:
        import fcntl
    except ImportError:  # Windows
        return True
    try:
        if folder not in _locks:
            folder.mkdir(parents=True, exist_ok=True)
            _locks[folder] = os.open(folder / LOCKS_FILE, os.O_RDWR | os.O_CREAT
                                     | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:  # no lock to be had here (read-only, unreadable): saving says why
        return True
    try:
        fcntl.lockf(_locks[folder], fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _lock_offset(walk_id))
    except OSError as exc:  # EACCES/EAGAIN: another process holds it
        return exc.errno not in (errno.EACCES, errno.EAGAIN)
    _held.add((folder, walk_id))
    return True


def save_walk(record: WalkRecord) -> Path | None:
    """Save a walk; its `id` names the file. OSError when it cannot be saved (WalkBusy when
    another process saves the same walk). A walk not worth keeping is not written, and the
    file an earlier step wrote (before a restart, say) is removed: None then."""
    if not WALK_ID_RE.match(record.id):
        # An OSError, so front ends that already survive a full or read-only disk survive this.
        raise OSError(errno.EINVAL, f"walk id {inert_line(repr(record.id))} cannot name a file")
    if not claim_walk(record.id):
        raise WalkBusy(errno.EBUSY, f"walk {record.id} is being saved by another trainmedic")
    path = walks_dir() / f"{record.id}.json"
    if not record.worth_keeping:
        with contextlib.suppress(OSError):  # a folder that cannot be written says so on a
            path.unlink(missing_ok=True)   # save that writes; removing is only tidying
        return None
    write_json_atomic(path, record.to_dict())
    return path


@dataclass
class SavedWalk:
    path: Path
    record: WalkRecord

    @property
    def id(self) -> str:
        return self.record.id


@dataclass
class Skipped:
    path: Path
    reason: str
    folder: bool = False  # the walks folder itself could not be read: no walk was

    def __str__(self) -> str:
        return inert_line(f"{self.path}: skipped: {self.reason}")

    def error(self) -> str:
        """The one line a command ends with when the whole folder is unreadable."""
        hint = " (made by `sudo trainmedic`? fix its owner, or set XDG_STATE_HOME)" \
            if "ermission" in self.reason else ""
        return inert_line(f"{self.path}: cannot read the saved walks: {self.reason}{hint}")


def unreadable_folder(skipped: list[Skipped]) -> Skipped | None:
    """The walks folder itself, when it is what could not be read."""
    return next((s for s in skipped if s.folder), None)


def read_walk(path: Path) -> SavedWalk | Skipped:
    try:
        data = json.loads(read_bounded(path, MAX_WALK_BYTES).decode("utf-8"))
    except OSError as exc:
        return Skipped(path, exc.strerror or str(exc))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Skipped(path, f"corrupt or truncated ({exc.__class__.__name__})")
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) \
            or not isinstance(data.get("steps"), list):
        return Skipped(path, "not a saved walk")
    if data.get("version", VERSION) != VERSION:
        return Skipped(path, f"saved by another trainmedic version ({data.get('version')!r})")
    return SavedWalk(path, WalkRecord.from_dict(data))


def _sweep_stale_temps(folder: Path) -> None:
    """Remove temporary files that killed writers left behind (never a live writer's)."""
    cutoff = time.time() - STALE_TEMP_S
    for path in folder.glob(f".*{TEMP_SUFFIX}"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed since it was read
        return 0.0


def list_walks(limit: int | None = None) -> tuple[list[SavedWalk], list[Skipped]]:
    """Saved walks, newest first, and the files that could not be read (never fatal).

    With `limit`, only the newest files (by modification time) are read until that many walks
    are found, so the home screen stays fast however many walks pile up.
    """
    folder = walks_dir()
    try:
        if not folder.is_dir():
            return [], []
    except OSError as exc:  # a state folder made by `sudo trainmedic`: Python 3.11 raises here
        return [], [Skipped(folder, exc.strerror or str(exc), folder=True)]
    walks: list[SavedWalk] = []
    skipped: list[Skipped] = []
    try:
        paths = sorted((p for p in folder.iterdir()
                        if p.suffix == ".json" and not p.name.startswith(".")),
                       key=lambda p: (-_mtime(p), p.name))
    except OSError as exc:
        return [], [Skipped(folder, exc.strerror or str(exc), folder=True)]
    _sweep_stale_temps(folder)
    empty_before = time.time() - EMPTY_WALK_S
    for path in paths:
        if limit is not None and len(walks) >= limit:
            break
        result = read_walk(path)
        if isinstance(result, Skipped):
            skipped.append(result)
        elif result.record.worth_keeping:
            walks.append(result)
        elif _mtime(path) < empty_before:  # an empty walk an older version saved: cleaned up
            with contextlib.suppress(OSError):
                path.unlink()
    walks.sort(key=lambda w: (w.record.updated, _mtime(w.path), w.id), reverse=True)
    return walks, skipped


def find_walk(name: str | None, *, prefer_finished: bool = False,
              ) -> tuple[SavedWalk | None, list[Skipped]]:
    """The walk with this id (or id prefix, or file path), or the latest when `name` is None
    (with `prefer_finished`, the latest that reached a fix, if any did)."""
    if name and _is_file(Path(name)):
        result = read_walk(Path(name))
        return (result, []) if isinstance(result, SavedWalk) else (None, [result])
    walks, skipped = list_walks()
    if name is None:
        finished = [w for w in walks if w.record.finished] if prefer_finished else []
        chosen = finished or walks
        return (chosen[0] if chosen else None), skipped
    matches = [w for w in walks if w.id == name] or [w for w in walks if w.id.startswith(name)]
    return (matches[0] if matches else None), skipped


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False
