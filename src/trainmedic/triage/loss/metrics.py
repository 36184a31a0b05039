"""Metrics files, where most tools read the loss: HF `trainer_state.json` (`log_history`), CSV and
JSONL with a step and a loss column, W&B CSV exports (`run - train/loss`, `__MIN`/`__MAX`
columns), TensorBoard event files. Detected from content (the name only breaks ties).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from trainmedic.triage.loss import tfevents
from trainmedic.triage.loss.detect import SeriesAnalyzer

STEP_KEYS = ("step", "global_step", "trainer/global_step", "train/global_step", "_step",
             "Step", "iteration", "iter", "steps", "global step")
LOSS_KEYS = ("loss", "train/loss", "train_loss", "training_loss", "train/lm_loss", "lm_loss",
             "lm loss", "train/loss_step", "train_loss_step", "Loss/train", "loss/train",
             "reduced_train_loss", "train/reduced_train_loss")
GRAD_KEYS = ("grad_norm", "train/grad_norm", "grad-norm", "gradient_norm", "grad norm",
             "train/grad-norm", "optim/grad_norm")
SCALE_KEYS = ("loss_scale", "loss-scale", "loss scale", "train/loss_scale")
TIME_KEYS = ("iteration-time", "step_time", "train_step_timing", "train/step_time",
             "elapsed_time_per_iteration_ms", "iteration_time")
_RUN_PREFIX = re.compile(r"^.+? - (?=\S)")  # W&B export: "my-run - train/loss"
MAX_TABLE_BYTES = 2 << 30


def _bare(name: str) -> str:
    return _RUN_PREFIX.sub("", name.strip())


def pick(columns: Iterable[str], preferred: tuple[str, ...], suffix: str | None = None,
         ) -> str | None:
    """The column to use: a preferred name (also under a W&B run prefix), else by suffix."""
    cols = [c for c in columns if not c.endswith(("__MIN", "__MAX", "__step"))]
    bare = {c: _bare(c) for c in cols}
    for want in preferred:
        for c in cols:
            if bare[c] == want or bare[c].lower() == want.lower():
                return c
    if suffix:
        for c in cols:
            low = bare[c].lower()
            if (low.endswith(suffix) and "val" not in low and "eval" not in low
                    and "test" not in low and "scale" not in low):
                return c
    return None


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        v = v.strip().strip('"')
        if not v:
            return None
        try:
            return float(v)
        except ValueError:
            return None
    return None


class Table:
    """Rows of dicts with the columns chosen once (from the header or the first rows)."""

    def __init__(self, series: SeriesAnalyzer, name: str) -> None:
        self.s = series
        self.name = name
        self.step: str | None = None
        self.loss: str | None = None
        self.grad: str | None = None
        self.scale: str | None = None
        self.time: str | None = None
        self.rows = 0

    def choose(self, columns: Iterable[str]) -> bool:
        cols = list(columns)
        self.loss = pick(cols, LOSS_KEYS, "loss")
        if self.loss is None:
            return False
        self.step = pick(cols, STEP_KEYS)
        self.grad = pick(cols, GRAD_KEYS, "grad_norm")
        self.scale = pick(cols, SCALE_KEYS)
        self.time = pick(cols, TIME_KEYS)
        if self.step is None:
            note = f"{self.name}: no step column; steps are row numbers"
            if note not in self.s.a.notes:
                self.s.a.notes.append(note)
        return True

    def row(self, rec: dict, lineno: int, text: str = "") -> bool:
        loss = _num(rec.get(self.loss)) if self.loss else None
        if loss is None:
            return False
        self.rows += 1
        step_v = _num(rec.get(self.step)) if self.step else None
        step = int(step_v) if step_v is not None and math.isfinite(step_v) else self.rows
        grad = _num(rec.get(self.grad)) if self.grad else None
        scale = _num(rec.get(self.scale)) if self.scale else None
        t = _num(rec.get(self.time)) if self.time else None
        if t is not None and self.time and ("timing" in self.time or t < 50):
            t *= 1000.0  # seconds -> ms
        where = (self.name, lineno, text or json.dumps(rec, default=str)[:500])
        self.s.point(step, loss, grad=grad, scale=scale, time_ms=t, where=where)
        return True


def sniff(head: bytes, name: str) -> str | None:
    """'tfevents', 'trainer-state', 'jsonl', 'csv' or None (a text log)."""
    if tfevents.looks_like_tfevents(head, os.path.basename(name)):
        return "tfevents"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{") and b'"log_history"' in head:
        return "trainer-state"
    first, _, rest = text.partition(b"\n")
    if first.startswith(b"{") and first.rstrip().endswith(b"}"):
        try:
            rec = json.loads(first)
        except ValueError:
            return None
        if isinstance(rec, dict) and pick(rec, LOSS_KEYS, "loss"):
            return "jsonl"
        return None
    if b"," in first and b"\n" in text and not first.startswith(b"#"):
        cols = next(csv.reader([first.decode("utf-8", "replace")]), [])
        second = rest.split(b"\n", 1)[0]
        if (len(cols) >= 2 and pick(cols, LOSS_KEYS, "loss")
                and re.match(rb"^\s*\"?[-+0-9.eEnaif]", second)):
            return "csv"
    return None


def _lines(stream: BinaryIO) -> Iterator[tuple[int, str]]:
    yield from enumerate(io.TextIOWrapper(stream, encoding="utf-8", errors="replace",
                                          newline=""), 1)


def read(kind: str, stream: BinaryIO, series: SeriesAnalyzer, name: str) -> int:
    """Feed the series from a metrics file; returns the number of loss points read."""
    if kind == "tfevents":
        return _read_tfevents(stream, series, name)
    if kind == "trainer-state":
        return _read_trainer_state(stream, series, name)
    if kind == "jsonl":
        return _read_jsonl(stream, series, name)
    if kind == "csv":
        return _read_csv(stream, series, name)
    return 0


def _read_trainer_state(stream: BinaryIO, series: SeriesAnalyzer, name: str) -> int:
    from trainmedic.errors import UsageError

    try:
        data = json.loads(stream.read(MAX_TABLE_BYTES).decode("utf-8", "replace"))
    except ValueError as exc:
        raise UsageError(f"{name}: not valid JSON: {exc}") from exc
    history = data.get("log_history") if isinstance(data, dict) else None
    if not isinstance(history, list):
        return 0
    for key in ("logging_steps", "save_steps"):
        v = data.get(key)
        if isinstance(v, int) and v > 0:
            if key == "logging_steps":
                series.set_interval(v)
            else:
                series.a.save_interval = v
    m = re.search(r"checkpoint-(\d+)", name)
    if m:  # a trainer_state.json inside checkpoint-N: that checkpoint exists
        series.a.saves.append(int(m.group(1)))
        series.a.save_paths[int(m.group(1))] = os.path.dirname(name)
    table = Table(series, name)
    table.loss, table.step, table.grad = "loss", "step", "grad_norm"
    n = 0
    for rec in history:
        if isinstance(rec, dict) and "loss" in rec and table.row(rec, 0):
            n += 1
    return n


def _read_jsonl(stream: BinaryIO, series: SeriesAnalyzer, name: str) -> int:
    table = Table(series, name)
    chosen = False
    n = 0
    for lineno, line in _lines(stream):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if not chosen:
            chosen = table.choose(rec)
            if not chosen:
                continue
        if table.loss not in rec and not table.choose(rec):
            continue  # an eval or summary record
        if table.row(rec, lineno, line[:500]):
            n += 1
    return n


def _read_csv(stream: BinaryIO, series: SeriesAnalyzer, name: str) -> int:
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="")
    reader = csv.DictReader(text)
    table = Table(series, name)
    if not reader.fieldnames or not table.choose(reader.fieldnames):
        return 0
    n = 0
    for rec in reader:
        if table.row(rec, reader.line_num, ",".join(str(v) for v in rec.values())[:500]):
            n += 1
    return n


def _tag_role(tag: str) -> str | None:
    low = tag.lower()
    if "vs samples" in low or "vs tokens" in low:
        return None  # Megatron writes each scalar twice more against samples and tokens
    bare = low.rsplit("/", 1)[-1] if low.count("/") == 1 and low.startswith("train") else low
    if low in ("lm loss", "train/loss", "train_loss", "loss", "loss/train", "train/lm_loss",
               "lm_loss", "training_loss", "train/loss_step", "reduced_train_loss") or (
               bare == "loss" and low.startswith("train")):
        return "loss"
    if low in ("grad-norm", "grad_norm", "train/grad_norm", "grad norm", "train/grad-norm"):
        return "grad"
    if low in ("loss-scale", "loss_scale", "train/loss_scale"):
        return "scale"
    if low in ("iteration-time", "train_step_timing in s", "train/step_time"):
        return "time"
    return None


def _read_tfevents(stream: BinaryIO, series: SeriesAnalyzer, name: str) -> int:
    """Events of one step are grouped (scalars of a step arrive one by one)."""
    pending: dict[str, float] = {}
    cur: int | None = None
    n = 0
    loss_tag: str | None = None

    def emit() -> None:
        nonlocal n
        if cur is None or "loss" not in pending:
            return
        t = pending.get("time")
        if t is not None and t < 50:
            t *= 1000.0
        series.point(cur, pending["loss"], grad=pending.get("grad"),
                     scale=pending.get("scale"), time_ms=t,
                     where=(name, 0, f"step {cur} {loss_tag} = {pending['loss']!r}"))
        n += 1

    for step, tag, value in tfevents.scalars(stream):
        role = _tag_role(tag)
        if role is None:
            continue
        if role == "loss":
            if loss_tag is None:
                loss_tag = tag
            elif tag != loss_tag:
                continue
        if step != cur:
            emit()
            pending, cur = {}, step
        pending[role] = value
    emit()
    return n
