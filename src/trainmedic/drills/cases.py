"""The drill cases: where they are (in the wheel or in a checkout), how they read, which one next.

A case file is the corpus format (see `tests/corpus/` and its notes): `# key: value` header lines
starting with `# source: URL`, a `# ---` line, then the log excerpt, verbatim. The folder names
the area (the expected tree, or `healthy`). A file that does not read as a case is skipped with
its reason, never fatal: a drill needs one good case, not all of them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainmedic.errors import UsageError
from trainmedic.safefile import read_bounded

HEALTHY = "healthy"
SEPARATOR = "\n# ---\n"
MAX_CASE_BYTES = 1 << 20  # the longest excerpt is a few KB
_HEADER = re.compile(r"^# ([a-z-]+): ?(.*)$")
_AREA = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def expected_place(expect: str) -> tuple[str | None, str | None]:
    """A case's `expect` (`tree#node`, `tree#?` or `none`) as (tree, node); None where it pins
    nothing (a healthy log has neither, `tree#?` has no node). The test corpus reads it too."""
    if expect == "none":
        return None, None
    tree, _, node = expect.partition("#")
    return tree, (node if node and node != "?" else None)


def drills_dir() -> Path:
    """`trainmedic/_drills` inside the installed wheel, else the corpus of a source checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_drills"
    if packaged.is_dir():
        return packaged
    return here.parent.parent / "tests" / "corpus" / "cases"


@dataclass(frozen=True)
class DrillCase:
    """One real incident: the excerpt the trainee sees, and what is revealed at the end."""

    name: str  # "oom/axolotl_70b_fsdp_1717": area / file stem
    area: str  # the folder: the expected tree, or "healthy"
    expect: str  # "tree#node", "tree#?" or "none"
    excerpt: str
    source: str = ""  # revealed at the end
    title: str = ""  # revealed at the end (it often names the cause)
    framework: str = ""  # shown with the log: what the job ran, as its owner would know
    resolution: str = ""  # revealed at the end
    why: str = ""  # revealed at the end: the decisive line

    @property
    def healthy(self) -> bool:
        return self.expect == "none"

    @property
    def tree(self) -> str | None:
        return expected_place(self.expect)[0]

    @property
    def node(self) -> str | None:
        """The expected node id, or None when the thread pins only the tree (`tree#?`)."""
        return expected_place(self.expect)[1]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "area": self.area, "expect": self.expect,
                "source": self.source, "title": self.title, "framework": self.framework,
                "resolution": self.resolution, "why": self.why, "excerpt": self.excerpt}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DrillCase:
        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        return cls(name=text("name"), area=text("area"), expect=text("expect") or "none",
                   excerpt=text("excerpt"), source=text("source"), title=text("title"),
                   framework=text("framework"), resolution=text("resolution"), why=text("why"))


def parse_case(text: str, name: str, area: str) -> DrillCase:
    """A case from its file text; ValueError saying what is wrong."""
    head, sep, body = text.partition(SEPARATOR)
    if not sep:
        raise ValueError("no '# ---' line between the header and the excerpt")
    header: dict[str, str] = {}
    for line in head.splitlines():
        match = _HEADER.match(line)
        if match is not None:
            header.setdefault(match[1], match[2].strip())
    expect = header.get("expect", "")
    if not header.get("source", "").startswith("https://"):
        raise ValueError("no '# source: https://...' line")
    if expect != "none" and not re.fullmatch(r"[a-z0-9-]+#(?:[a-z0-9-]+|\?)", expect):
        raise ValueError(f"expect must be TREE#NODE, TREE#? or none, not {expect!r}")
    if not body.strip():
        raise ValueError("the excerpt is empty")
    return DrillCase(name=name, area=area, expect=expect, excerpt=body.rstrip("\n") + "\n",
                     source=header["source"], title=header.get("title", ""),
                     framework=header.get("framework", ""),
                     resolution=header.get("resolution", ""), why=header.get("why", ""))


def load_cases(folder: Path | None = None) -> tuple[list[DrillCase], list[str]]:
    """Every case under `folder` (default `drills_dir()`), by name, and the files skipped."""
    root = folder or drills_dir()
    cases: list[DrillCase] = []
    skipped: list[str] = []
    try:
        paths = sorted(root.glob("*/*.log"))
    except OSError as exc:
        return [], [f"{root}: {exc.strerror or exc}"]
    for path in paths:
        area = path.parent.name
        if not _AREA.match(area):
            continue
        try:
            text = read_bounded(path, MAX_CASE_BYTES).decode("utf-8", "replace")
            cases.append(parse_case(text, f"{area}/{path.stem}", area))
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            skipped.append(f"{path}: {why}")
    return cases, skipped


def areas(cases: Iterable[DrillCase]) -> list[str]:
    return sorted({c.area for c in cases})


def choose(cases: list[DrillCase], *, area: str | None = None, name: str | None = None,
           seed: int | None = None, done: Iterable[str] = ()) -> DrillCase:
    """The next drill. `name` picks one; `area` narrows to a tree (or `healthy`). With `seed`
    the choice depends on the seed and the cases only (a class doing the same drill); without
    it, drills not done yet come first."""
    if not cases:
        raise UsageError(f"no drill cases found in {drills_dir()}")
    if name is not None:
        wanted = name.removesuffix(".log")
        found = [c for c in cases if c.name == wanted] or \
            [c for c in cases if c.name.endswith("/" + wanted)]
        if not found:
            raise UsageError(f"no drill '{name}' (cases look like oom/<name>; see --list)")
        return found[0]
    pool = cases
    if area is not None:
        pool = [c for c in cases if c.area == area]
        if not pool:
            raise UsageError(f"no drills for '{area}' (areas: {', '.join(areas(cases))})")
    if seed is not None:
        return random.Random(seed).choice(sorted(pool, key=lambda c: c.name))
    finished = set(done)
    fresh = [c for c in pool if c.name not in finished]
    return random.SystemRandom().choice(fresh or pool)
