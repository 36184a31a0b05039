"""trainmedic as a library: triage logs, estimate memory, walk a tree (notebooks, CI jobs).

The names here are the public API, documented with runnable examples in `docs/api.md`:

- `triage_paths(paths)`, `triage_text(text)` -> `TriageReport`: what went wrong and where to
  continue (`report.findings`, most decisive first; `finding.link` is a `tree#node`); both take
  `symptom=` (`SYMPTOMS`), what you saw, as `trainmedic triage --symptom` does;
- `estimate_memory(args, script=..., gpu_memory=...)` -> `MemoryReport`: Megatron-style
  per-GPU memory, the verdict and the cheapest changes that fit;
- `load_forest()`, `open_walk(target)`, `walk(target, answers)` -> `WalkSession`: the trees and
  the same walk engine as the app and `trainmedic walk`.

Errors are `UsageError` (a one-line message) for input that cannot be read or used.
Importing this module is cheap: each function imports its engine when first called, and
nothing here ever imports Textual or Rich (an import contract checks it).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from trainmedic.errors import TrainmedicError, UsageError

if TYPE_CHECKING:
    from trainmedic.memory.model import MemoryReport
    from trainmedic.trees.forest import Forest, Ref
    from trainmedic.triage.report import Evidence, Finding, TriageReport
    from trainmedic.walk import WalkSession

__all__ = [
    "SYMPTOMS", "Evidence", "Finding", "Forest", "MemoryReport", "Ref", "TrainmedicError",
    "TriageReport", "UsageError", "WalkSession", "estimate_memory", "load_forest", "open_walk",
    "triage_paths", "triage_text", "walk",
]
# what a user can say they saw (`symptom=`): the entry tree's first question, in one word each
SYMPTOMS = ("hang", "crash", "slow", "diverged", "not-learning")

PathLike = str | os.PathLike[str]
_TYPES = {  # the result types, importable from here without importing their engines now
    "Evidence": "trainmedic.triage.report", "Finding": "trainmedic.triage.report",
    "TriageReport": "trainmedic.triage.report", "MemoryReport": "trainmedic.memory.model",
    "Forest": "trainmedic.trees.forest", "Ref": "trainmedic.trees.forest",
    "WalkSession": "trainmedic.walk",
}


def __getattr__(name: str) -> Any:
    if name not in _TYPES:
        raise AttributeError(f"module 'trainmedic.api' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_TYPES[name]), name)
    globals()[name] = value
    return value


# -- triage ----------------------------------------------------------------------------------
def triage_paths(paths: PathLike | Iterable[PathLike], *,
                 symptom: str | None = None) -> TriageReport:
    """Triage log files and folders (searched recursively: one log per rank is best), `.gz`
    files, or `"-"` for standard input, as `trainmedic triage` does.

    Returns the `TriageReport`: `findings` (causes before their consequences), `loss` (the loss
    curve's analysis), `ranks`, `files`, `to_dict()` (the `--json` form). `symptom` (one of
    `SYMPTOMS`) is what you saw: findings that fit it come first (`finding.fits_symptom`), a
    clear cause still leads, and where nothing in the log fits, the answer gives the first
    finding (`report.symptom` says how it was used). Raises `UsageError` when nothing given can
    be read, or for a symptom not in `SYMPTOMS`.
    """
    from trainmedic.triage import triage_paths as run

    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    return run([os.fspath(p) for p in items], symptom=symptom)


def triage_text(text: str, name: str = "<pasted>", *, symptom: str | None = None) -> TriageReport:
    """Triage text held in memory: one error line, a traceback or a whole log. `name` stands
    for the file name in the evidence lines (`name:LINE`); `symptom` as in `triage_paths`."""
    from trainmedic.triage import triage_text as run

    return run(text, name=name, symptom=symptom)


# -- memory ----------------------------------------------------------------------------------
def estimate_memory(args: str | Sequence[str] = (), *, script: PathLike | None = None,
                    script_args: Sequence[str] = (), gpu_memory: str | float | None = None,
                    suggest: bool = True) -> MemoryReport:
    """Theoretical per-GPU memory of a Megatron-style configuration, as `trainmedic memory`.

    `args`: Megatron's own flags (a list, or one shell-quoted string); `script`: a launch
    script to read them from (`args` then override it; `script_args` are its `$1 $2 ...`).
    `gpu_memory`: the card, `"80GiB"`, `"141GB"` or MiB as a number (default 80 GiB, with a
    note; the local GPUs are never asked). With `suggest`, the cheapest changes that fit are
    in `report.suggestions`. `report.verdict` is "fits", "tight" or "does not fit"; the
    numbers are MiB. Raises `UsageError` naming the flag or the script line it cannot use.
    """
    from trainmedic.memory.capacity import parse_capacity
    from trainmedic.memory.checks import run_checks
    from trainmedic.memory.config import config_from_args, require
    from trainmedic.memory.model import estimate
    from trainmedic.memory.suggest import add_suggestions

    flags = shlex.split(args) if isinstance(args, str) else [str(a) for a in args]
    if script is not None:
        from trainmedic.launch.script import read_script
        from trainmedic.memory.from_script import script_config_and_command

        path = os.fspath(script)
        cfg, _cmd = script_config_and_command(read_script(path), path=path,
                                              argv=[str(a) for a in script_args])
        cfg = config_from_args(flags, config=cfg)
    elif flags:
        cfg = config_from_args(flags)
    else:
        raise UsageError("give Megatron arguments (--num-layers 32 ...) or script=PATH")
    capacity: float | None = None
    source: str | None = None
    if isinstance(gpu_memory, str):
        try:
            capacity, source = parse_capacity(gpu_memory), f"gpu_memory={gpu_memory!r}"
        except ValueError as exc:
            raise UsageError(f"gpu_memory: {exc}") from None
    elif gpu_memory is not None:
        capacity, source = float(gpu_memory), f"gpu_memory={gpu_memory} MiB"
    cfg = require(cfg)
    report = estimate(cfg, capacity_mib=capacity, capacity_source=source)
    if suggest:
        report = add_suggestions(report)
    report.checks = run_checks(cfg)
    return report


# -- the trees and the walk ------------------------------------------------------------------
def load_forest(trees: Iterable[PathLike] = ()) -> Forest:
    """The built-in trees plus your own folders or files (one with a built-in's id replaces
    it). Raises `UsageError` naming the first broken tree (`trainmedic lint` lists them all)."""
    from trainmedic.trees.forest import load_forest_or_fail

    return load_forest_or_fail([os.fspath(t) for t in trees])


def open_walk(target: str = "triage", *, forest: Forest | None = None,
              trees: Iterable[PathLike] = ()) -> WalkSession:
    """A walk at `tree` or `tree#node`, to drive yourself: `session.question` (its
    `.answers`), `session.answer(i)` (0-based), `session.back()`, `session.fix`,
    `session.path()`, `session.record()` (what `trainmedic report` reads). No probe runs unless
    you call `session.run_due_probes(...)`; nothing is saved unless you save it."""
    from trainmedic.walk import WalkSession

    return WalkSession(forest or load_forest(trees), target)


def walk(target: str, answers: Iterable[int], *, forest: Forest | None = None,
         trees: Iterable[PathLike] = (), save: bool = False) -> WalkSession:
    """Walk without prompting, as `trainmedic walk TARGET --answers 1,3,2`: `answers` are the
    1-based numbers a person would type. Returns the session where the answers end (a fix, or a
    question when they stop early). With `save`, the walk is saved like any other, so
    `trainmedic report` and `walk --resume` find it. Raises `UsageError` for an answer out of
    range or one given after a fix."""
    session = open_walk(target, forest=forest, trees=trees)
    for step, number in enumerate(answers, start=1):
        session.answer_typed(number, step)
    if save:
        from trainmedic.saved_walks import save_walk

        save_walk(session.record())
    return session
