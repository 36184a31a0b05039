"""Helpers shared by the probe tests: fixture files and fake-script bodies."""

from __future__ import annotations

import os
from pathlib import Path

from trainmedic.probes.base import ProbeResult
from trainmedic.probes.registry import declared_facts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "probes"


def fixture_path(name: str) -> Path:
    return FIXTURES / name


def fixture_text(name: str) -> str:
    return fixture_path(name).read_text()


def cat_script(*pairs: tuple[str, str], default: str = "") -> str:
    """A case statement printing fixture files by argument pattern (first match wins)."""
    lines = ['case "$*" in']
    for pattern, name in pairs:
        lines.append(f'  {pattern}) /bin/cat "{fixture_path(name)}" ;;')
    lines.append(f"  *) {default or 'echo unexpected arguments: $* >&2; exit 9'} ;;")
    lines.append("esac")
    return "\n".join(lines)


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie waiting for a (container) init to reap it is dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


_PY_TYPES = {"int": int, "float": float, "bool": bool, "str": str, "list": list}


def check_types(result: ProbeResult) -> None:
    """Every fact a probe returns is declared, with the declared type."""
    declared = declared_facts()[result.name]
    for fact, value in result.facts.items():
        assert fact in declared, f"{result.name}.{fact} not declared"
        expected = _PY_TYPES[declared[fact]]
        assert isinstance(value, expected) and not (
            expected is int and isinstance(value, bool)
        ), f"{result.name}.{fact}={value!r} is not {declared[fact]}"
