"""The framework checkout's commit and dirty flag, for the bug-report checklist.

Maintainers' first question is "which commit?"; `git` runs from an argument list with a
timeout, and any failure is a one-line usage error naming the path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainmedic import children
from trainmedic.errors import UsageError

GIT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RepoInfo:
    path: str
    commit: str
    dirty: bool

    def to_dict(self) -> dict:
        return {"path": self.path, "commit": self.commit, "dirty": self.dirty}

    def __str__(self) -> str:
        return f"{self.commit}" + (" (dirty: uncommitted changes)" if self.dirty else " (clean)")


def _git(path: Path, *args: str) -> str:
    try:
        done = children.run(["git", "-C", str(path), *args], GIT_TIMEOUT_S)
    except FileNotFoundError:
        raise UsageError("--repo needs git, which is not installed") from None
    except OSError as exc:  # git present but not executable, and the like
        raise UsageError(f"--repo {path}: cannot run git: {exc.strerror or exc}") from None
    if done.timed_out:
        raise UsageError(f"--repo {path}: git did not answer within {GIT_TIMEOUT_S:.0f}s")
    if done.returncode != 0:
        why = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["git failed"])[-1]
        raise UsageError(f"--repo {path}: not a git checkout ({why})")
    return done.stdout.decode("utf-8", "replace")


def repo_info(path: str | Path) -> RepoInfo:
    folder = Path(path)
    if not folder.is_dir():
        raise UsageError(f"--repo {path}: no such folder")
    commit = _git(folder, "rev-parse", "HEAD").strip()
    dirty = bool(_git(folder, "status", "--porcelain", "--untracked-files=no").strip())
    return RepoInfo(str(path), commit, dirty)
