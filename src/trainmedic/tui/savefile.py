"""Writing a file from the app: one rule for overwriting, one way to say what happened.

The report and the runbook export both let the person edit the target path first; an existing
file is only replaced after a second, explicit save (the first one asks), so a stray key can
never clobber yesterday's report.
"""

from __future__ import annotations

from pathlib import Path


class SaveGuard:
    """Remembers which existing path the person was warned about; the next save confirms it."""

    def __init__(self) -> None:
        self._warned: Path | None = None

    def check(self, raw: str) -> tuple[Path | None, str]:
        """(path to write, "") when it may be written now, else (None, why not)."""
        text = raw.strip()
        if not text:
            return None, "give a file name first"
        path = Path(text).expanduser()
        if path.is_dir():
            return None, f"{path} is a folder: give a file name"
        if path.exists() and self._warned != path.resolve():
            self._warned = path.resolve()
            return None, f"{path} exists: save again to overwrite it"
        return path, ""

    def reset(self) -> None:
        self._warned = None


def write_text(path: Path, text: str) -> str:
    """Write `text` (LF line ends, UTF-8); returns "" or a one-line reason it failed.

    Atomic, 0600, never through a symbolic link (`safefile`); the guard above has already asked
    before an existing file is replaced, so that counts as --force."""
    from trainmedic.safefile import write_text as write_safely

    try:
        write_safely(path, text, force=True)
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return ""
