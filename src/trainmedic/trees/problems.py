"""Problems found while loading or linting trees, printed as `FILE:LINE: error: message`."""

from __future__ import annotations

from collections.abc import Mapping
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

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Problem:
        """The problem `to_dict` wrote. Strict: a problem is only ever read back from lint's
        own result cache, where a malformed entry must be a miss (ValueError), not a guess."""
        file, line, severity, message = (data.get(k) for k in ("file", "line", "severity",
                                                                "message"))
        if not (isinstance(file, str) and isinstance(line, int) and isinstance(message, str)
                and not isinstance(line, bool)):
            raise ValueError(f"not a problem: {data!r:.200}")
        if severity == "error":
            return cls(file, line, "error", message)
        if severity == "warning":
            return cls(file, line, "warning", message)
        raise ValueError(f"unknown severity {severity!r:.40}")
