"""Every place trainmedic keeps files, and the one way it writes them (atomically).

One owner for paths on disk: saved walks and the last cluster sweep under the state folder
(`$XDG_STATE_HOME/trainmedic`), the home screen's tree cards, the parsed-tree cache and lint's
results under the cache folder (`$XDG_CACHE_HOME/trainmedic`). A write goes to a temporary file
in the same folder, is fsynced and then renamed over the old one, so a kill (or a dropped SSH
connection) in the middle of a write leaves the previous file whole.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from trainmedic.safefile import write_json


def _xdg(variable: str) -> Path | None:
    base = os.environ.get(variable, "").strip()
    if base and Path(base).is_absolute():  # the XDG spec says to ignore relative paths
        return Path(base) / "trainmedic"
    return None


def state_dir() -> Path:
    """`$XDG_STATE_HOME/trainmedic`, or the platform's usual place for per-user state."""
    given = _xdg("XDG_STATE_HOME")
    if given is not None:
        return given
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "trainmedic"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home())) / "trainmedic"
    return Path.home() / ".local" / "state" / "trainmedic"


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/trainmedic`: what can be rebuilt at any time (`~/.cache/trainmedic`;
    on macOS and Windows the state folder's `cache/`)."""
    given = _xdg("XDG_CACHE_HOME")
    if given is not None:
        return given
    if sys.platform == "darwin" or os.name == "nt":
        return state_dir() / "cache"
    return Path.home() / ".cache" / "trainmedic"


def walks_dir() -> Path:
    """One JSON file per saved walk."""
    return state_dir() / "walks"


def cluster_result_path() -> Path:
    """The last cluster sweep, for trees and the app."""
    return state_dir() / "cluster-last.json"


def drill_progress_path() -> Path:
    """Drills done and their scores (`trainmedic drill --progress`)."""
    return state_dir() / "drills.json"


def home_cards_path() -> Path:
    """What the home screen lists for each tree, so the first frame never waits on YAML."""
    return cache_dir() / "home-cards.json"


def tree_cache_dir() -> Path:
    """Parsed tree files, one entry per file."""
    return cache_dir() / "trees"


def lint_results_path() -> Path:
    """`trainmedic lint`'s recent results, each under the key of what it was computed from."""
    return cache_dir() / "lint" / "results.json"


def write_json_atomic(path: Path, data: Any) -> None:  # Any: whatever json.dumps takes
    """Serialise first, then write a temporary file, fsync it and rename it over `path` (0600).

    Serialising before opening means unserialisable data never touches the disk; the rename is
    atomic on POSIX and Windows, so readers see the old file or the new one, never a mix.
    """
    write_json(path, data, target="state")
