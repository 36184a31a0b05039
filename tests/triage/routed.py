"""Where triage sends a text: the links of its findings, most decisive first (test helpers)."""

from __future__ import annotations

from trainmedic.triage import triage_text


def links(text: str, symptom: str | None = None) -> list[str]:
    return [f.link for f in triage_text(text, symptom=symptom).findings]


def top(text: str, symptom: str | None = None) -> str | None:
    """The first finding's link, None when triage finds nothing."""
    found = links(text, symptom)
    return found[0] if found else None
