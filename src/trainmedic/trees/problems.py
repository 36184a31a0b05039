"""Problems found while loading or linting trees, printed as `FILE:LINE: error: message`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trainmedic.textsafe import inert_line


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    line: int
    severity: Literal["error", "warning"]
    message: str

    def __str__(self) -> str:
        # a file name from a folder of trees is untrusted text too; messages quote tree keys
        return inert_line(f"{self.file}:{self.line}: {self.severity}: {self.message}")

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "severity": self.severity,
            "message": self.message,
        }
