"""Kept so that older imports keep working (the TUI's loss curve imports its types from here);
the loss analysis lives in `trainmedic.triage.loss`."""

from __future__ import annotations

from trainmedic.triage.loss import MAX_POINTS, LossTracker
from trainmedic.triage.loss.model import LossAnalysis, Spike

__all__ = ["MAX_POINTS", "LossAnalysis", "LossTracker", "Spike"]
