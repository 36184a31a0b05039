"""Readers of training-progress lines in text logs, one line at a time.

Formats (detected from content, each line on its own):
- Megatron-LM, Megatron-DeepSpeed, GPT-NeoX (`lm_loss`), NeMo 2 (`Training epoch E, iteration
  i/n | ... global_step: G |`): ` iteration N/ M | key: value | ...`;
- Hugging Face Trainer dicts, transformers 4.x (`{'loss': 2.31, ...}`) and 5.x (values printed as
  quoted strings), with the global step from the tqdm bar printed after the dict, else from
  `logging_steps`;
- DeepSpeed `step=N, skipped=K`, `OVERFLOW! ... reducing to S`; apex `Gradient overflow`;
- PyTorch Lightning / NeMo 1 progress bars (`Epoch E: ...| i/n [..., train_loss=...]`): the bar
  counts batches per epoch, so the global step adds up the epochs (or reads `global_step=`);
- OpenMMLab's mmengine runner (`Epoch(train)  [E][ i/n]  ...  grad_norm: G  loss: X` or
  `Iter(train) [ i/n]`) and the mmcv 1.x runner before it (`Epoch [E][i/n]  lr: ..., loss: X,
  grad_norm: G`), the epoch's batches added up into a global step;
- verl (`step:N - actor/pg_loss:X - actor/grad_norm:G - ...`, the `verl` module),
- torchtitan (`step: N  loss: X  grad_norm: G`), DLLogger (`DLLL {...}` JSON lines), and plain
  `step 100 loss 2.3` / `Iter 25: Train loss 1.59` / `step:2(2) total_loss:nan` /
  `02000 iter, average time 0.63, loss 1.2` lines;
- torchvision's reference scripts (`Epoch: [E]  [ i/n]  eta: ...  lr: X  loss: Y (avg)`) and
  one line per epoch (`Epoch: 3, Loss: 2.30`, `Epoch 85/300: 100%|...| ..., Loss 6.27, ...`);
- fairseq's progress lines, the 2017 form (`| epoch 001  1000 / 331737 loss=9.57 (10.94), ...,
  gnorm=2.0540`) and the later one (`epoch 001:   3615 / 6547 loss=0.439, ..., num_updates=3600,
  ..., gnorm=3.952, ...`), with the gradient norm;
- Ultralytics YOLO (v5, v7's fork, v8 and later) epoch rows under their column header
  (`Epoch  gpu_mem  box  obj  cls  total  labels  img_size`, `Epoch  GPU_mem  box_loss ...
  Instances  Size`): `41/299  65.1G  nan  0.01516  0  nan  1869  320: 100%|...`, the loss
  columns between the GPU memory and the last two counts, NaN if any of them is;
- Keras `fit` (`Epoch 2/100` then `89595/89595 [=====] - 8s - loss: 5.7257 - acc: 0.6448`);
- Chainer's and pytorch-pfn-extras' PrintReport tables (`epoch  main/loss  ...` then rows of
  numbers, read again by the scanner since no needle finds a row).
The learning rate, where a line prints it, is followed too: printed as 0 line after line, the
run cannot learn.
Also the lines around them that recovery needs: checkpoint saves, save and log intervals.
"""

from __future__ import annotations

import json
import re

from trainmedic.triage.loss import verl
from trainmedic.triage.loss.detect import SeriesAnalyzer, Where

NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|NaN|inf|Inf|-inf)"
MEGATRON_ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+\s*\|")
_HF_LOSS = re.compile(r"[{,]\s*'loss':\s*'?(" + NUM + r")'?\s*[,}]")
_HF_FIELD = re.compile(r"'(grad_norm|learning_rate|epoch|step)':\s*'?(" + NUM + r")'?")
_TQDM = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")
_LIGHTNING = re.compile(r"^\s*Epoch (\d+):[^|\[]*(?:\|[^|]*\|\s*(\d+)/(\d+)|:\s*(\d+)it)\s*"
                        r"\[([^\]]*)")
# a key starts where no key character stands before it: tried from inside a long run of them,
# every start scanned to the run's end again (quadratic on one long word)
_POSTFIX = re.compile(r"(?<![\w/.%])([A-Za-z_][\w/.%]*)=(" + NUM + r")")
# "step N ... loss X" (or "N iter ... loss X"), read by `after_marker`: one regex with a lazy gap
# between them tried the gap from every step word (quadratic on a line repeating "iteration 1/")
_PLAIN_STEP = re.compile(r"\b(?:step|iter|iteration|global_step)\b\s*[:=#]?\s*(\d+)\b", re.I)
# the count before the word: "000 epoch, 02000 iter, average time 0.63, loss -403.43"
_PLAIN_COUNT = re.compile(r"(?<![\w.])(\d+)\s+(?:iter|iters|iteration|step)\b", re.I)
_PLAIN_LOSS = re.compile(r"\b(?:(?:train|total)[_ ])?loss\b\s*[:=]?\s*(" + NUM + r")", re.I)
_PLAIN_GRAD = re.compile(r"\bgrad[_ ]?norm\b\s*[:=]?\s*(" + NUM + r")", re.I)
_TITAN = re.compile(r"\bstep:\s*(\d+)\s+loss:\s*(" + NUM + r")(?:\s+grad_norm:\s*(" + NUM + r"))?")
_MMENGINE = re.compile(r"\b(Epoch|Iter)\(train\)\s*(?:\[\s*(\d+)\])?\s*\[\s*(\d+)/(\d+)\]")
# mmcv 1.x runners (OpenMMLab before mmengine):
# `Epoch [1][100/62598]\tlr: ..., loss: X, grad_norm: G`
_MMCV = re.compile(r"\bEpoch \[(\d+)\]\[\s*(\d+)/(\d+)\]")
_MM_LOSS = re.compile(r"(?<![\w.])loss:\s*(" + NUM + r")")
_MM_GRAD = re.compile(r"\bgrad_norm:\s*(" + NUM + r")")
_DS_STEP = re.compile(r"\bstep=(\d+), skipped=(\d+)")
_DS_GLOBAL = re.compile(r"global_step=(\d+)")
# fp16 overflow lines, each read as its marker then the first scale after it (`after_marker`):
# a lazy gap between them was tried from every marker (quadratic on a line repeating it)
# (DeepSpeed before 0.4 wrote "[Rank 0] Overflow detected. Skipping step. Attempted ..."; its
# fused and unfused fp16 optimizers write "[deepspeed] fp16 dynamic loss scale overflow! Skipping
# step. Attempted loss scale: X, reducing to Y",
# https://github.com/huggingface/transformers/issues/14834)
_DS_OVERFLOW = (re.compile(r"OVERFLOW!|Overflow detected\. Skipping step"
                           r"|scale overflow! Skipping step"), re.compile(
    r"Attempted loss scale: (" + NUM + r")(?:, reducing to (" + NUM + r"))?"))
_APEX_OVERFLOW = (re.compile(r"Gradient overflow\.\s+Skipping step"),
                  re.compile(r"reducing loss scale to (" + NUM + r")"))
_SAVED = re.compile(r"saved checkpoint (?:from|at) iteration\s+(\d+)(?: to (\S+))?", re.I)
_HF_SAVED = re.compile(r"Saving model checkpoint to (\S*?checkpoint-(\d+))\b")
# "saved/saving ... checkpoint/model ... step N", read in three searches (`_generic_saved`): one
# regex with two lazy gaps tried every pair of positions (cubic: minutes on a line that repeats
# "Saving checkpoint" without a step)
_SAVING = re.compile(r"\bsav(?:ed|ing)\b", re.I)
_SAVED_WHAT = re.compile(r"\b(?:checkpoint|model)\b", re.I)
_SAVED_STEP = re.compile(r"(?:global_step|step[=_ ]|iter_?)(\d+)", re.I)
_INTERVAL = re.compile(r"\b(save[_-]interval|save_steps|log[_-]interval|logging_steps)"
                       r"\b\W{1,40}?(\d+)\b")
_DLLL = re.compile(r"DLLL (\{.*\})\s*$")
# torchvision's MetricLogger in the reference training scripts
_TV_EPOCH = re.compile(r"^\s*Epoch: \[(\d+)\]\s+\[\s*(\d+)/(\d+)\]")
_TV_LR = re.compile(r"(?<![\w.])lr: (" + NUM + r")")
# fairseq: the batch within the epoch; the global step is `num_updates` where printed
_FAIRSEQ = re.compile(r"\bepoch (\d+):?\s+(\d+) / (\d+) loss=(" + NUM + r")")
_FAIRSEQ_GRAD = re.compile(r"\bgnorm=(" + NUM + r")")
_FAIRSEQ_UPDATES = re.compile(r"\bnum_updates=(\d+)")
# Ultralytics YOLO rows: epoch/epochs, GPU memory in G, the loss columns, the label (instance)
# count and the image size, then the tqdm bar (one start: anchored, and no gap crosses a colon;
# the cells start at a non-blank, so the blanks before them are never split two ways)
_YOLO = re.compile(r"^\s*(\d+)/(\d+)\s+\d+(?:\.\d+)?G\s+([^\s:|][^:|]*):\s*\d+%\|")
_KERAS_EPOCH = re.compile(r"^\s*Epoch (\d+)/\d+\s*$")
_KERAS_BAR = re.compile(r"^\s*\d+/\d+ \[[=>.]+\] - .*? - loss: (" + NUM + r")(?![\w.])")
# a step line of a hand-written loop: `Epoch 1, Step 3, Loss: 0.9670` (the step counts within
# the epoch, so the points are numbered in the order printed)
_EPOCH_STEP_LOSS = re.compile(r"^\s*Epoch:?\s*(\d+)\s*[,:]\s*Step:?\s*(\d+)\s*[,:]\s*"
                              r"(?:train[_ ])?[Ll]oss\s*[:=]?\s*(" + NUM + r")(?![\w.])")
# one summary line per epoch: the epoch number, then the first (training) loss on the line
_EPOCH_LOSS = re.compile(r"^\s*Epoch:?\s*(\d+)(?:/\d+)?\s*[:,]\s.*?\b(?:train[_ ])?[Ll]oss\b"
                         r"[:=]?\s*(" + NUM + r")(?![\w.])")

# Chainer's PrintReport (and pytorch-pfn-extras', its port) prints a table: a header of reporter
# keys (`epoch  iteration  main/loss  validation/main/loss  ...  elapsed_time`), then a row of
# numbers per report. The rows hold no word a prefilter can find: the scanner reads them again
# from the header on (`table_waiting`, `table_row`).
# (each key after whitespace that is not optional: with `\s*` a run of letters could be split
# into keys in exponentially many ways before a stray character failed the match)
_TABLE_HEAD = re.compile(r"^\s*(?:epoch|iteration)(?:\s+[A-Za-z_][\w/.-]*)*\s*$")
TABLE_LOSS_KEYS = ("main/loss", "train/loss")
TABLE_MAX_ROWS = 1 << 20

LOSS_KEYS = ("lm loss", "lm_loss", "reduced_train_loss", "train_loss_step", "train_loss",
             "loss")


def parse_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def plain_step_loss(text: str) -> tuple[str, str] | None:
    """(step, loss) of a plain `step 100 ... loss 2.3` (or `100 iter ... loss 2.3`) line, as
    `STEP.*?LOSS` reads it."""
    found = after_marker(_PLAIN_STEP, _PLAIN_LOSS, text) or after_marker(_PLAIN_COUNT,
                                                                          _PLAIN_LOSS, text)
    return None if found is None else (found[0].group(1), found[1].group(1))


def after_marker(marker: re.Pattern[str], what: re.Pattern[str],
                 text: str) -> tuple[re.Match[str], re.Match[str]] | None:
    """(marker, what) where `marker.*?what` matches first, in linear time: the first marker
    whose line holds `what` after it, with the first such `what` (a later marker on the same
    line cannot do better: the part after it is part of the part after the first). One regex
    with the lazy gap tried the gap from every marker: quadratic on a line repeating it."""
    pos = 0
    found: re.Match[str] | None = None
    while True:
        head = marker.search(text, pos)
        if head is None:
            return None
        if found is None or found.start() < head.end():
            found = what.search(text, head.end())
            if found is None:
                return None  # none after this marker, so none after a later one either
        newline = text.find("\n", head.end(), found.start())
        if newline < 0:
            return head, found
        pos = newline + 1  # the gap cannot cross a line break: the next line's first marker


def megatron_fields(text: str) -> dict[str, str]:
    """`key: value` fields of a Megatron-style line (split on `|`, the key before the last `:`)."""
    out = {}
    for part in text.split("|"):
        key, sep, value = part.rpartition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def megatron_loss_key(fields: dict[str, str]) -> str | None:
    for key in LOSS_KEYS[:2]:
        if key in fields:
            return key
    return next((k for k in fields if (k.endswith(" loss") or k.endswith("_loss"))
                 and k != "loss scale"), None)


class LineReader:
    """Per-source state for the line readers; feeds a `SeriesAnalyzer`."""

    def __init__(self, series: SeriesAnalyzer) -> None:
        self.s = series
        self.a = series.a
        self.hints: set[str] = set()  # framework evidence seen in the text
        self.formats: dict[str, int] = {}
        self.log_interval: int | None = None
        self.logging_steps: int | None = None
        self._steps: list[int] = []  # first few Megatron steps: the log interval
        self.first_progress_line: int | None = None
        self.source = ""
        self._reset_source()

    def _reset_source(self) -> None:
        self._hf_index = 0
        self._hf_pending: tuple | None = None
        self._hf_gap = 1
        self._tqdm_step: int | None = None
        self._step_ctx: int | None = None
        self._epoch = -1
        self._epoch_offset = 0
        self._epoch_max = 0
        self._dl_epoch: int | None = None
        self._dl_offset = 0
        self._dl_max = 0
        self._dl_last = 0
        self._megatron_had_loss = False
        self._lr_exact_zeros = 0  # learning rates printed as an exact float zero, in a row
        self._keras_epoch: int | None = None
        self._keras_index = 0
        self._epoch_step_index = 0  # `Epoch E, Step S, Loss: X` lines read so far
        self._table: tuple[int, int, int] | None = None  # (columns, step column, loss column)
        self.table_line: int | None = None  # the header's line number
        self.table_rows = 0

    def begin(self, name: str) -> None:
        self.flush()
        self.source = name
        self.first_progress_line = None
        self._reset_source()

    def _fmt(self, name: str, lineno: int) -> None:
        self.formats[name] = self.formats.get(name, 0) + 1
        if self.first_progress_line is None:
            self.first_progress_line = lineno

    # ---- dispatch ------------------------------------------------------------------------
    def feed(self, text: str, lineno: int = 0) -> bool:
        """Parse one (clean) line; True when it told something about training progress."""
        where: Where = (self.source, lineno, text)
        self._hint(text)
        if "/loss" in text and self._table_head(text, lineno):
            return True
        if self._table is not None and self.table_row(text, lineno):
            return True
        if "iteration" in text:
            m = MEGATRON_ITER.search(text)
            if m:
                self._megatron(int(m.group(1)), text, where)
                return True
            m = _SAVED.search(text)
            if m:
                self._save(int(m.group(1)), m.group(2))
                return True
        if "'loss': " in text:
            m = _HF_LOSS.search(text)
            if m and "'eval_" not in text and "train_runtime" not in text:
                self._hf(m.group(1), text, where)
                return True
        if "Epoch " in text and ("it/s" in text or "s/it" in text or "it [" in text):
            m = _LIGHTNING.search(text)
            if m:
                return self._lightning(m, where)
        if "Epoch" in text and "oss" in text and self._epoch_line(text, where):
            return True
        if (" - loss: " in text or text.startswith("Epoch ")) and self._keras(text, where):
            return True
        if "G " in text and "%|" in text and self._yolo(text, where):
            return True
        if "|" in text and "/" in text and "[" in text:
            m = _TQDM.search(text)
            if m:
                self._tqdm(int(m.group(1)))
                if "OVERFLOW" not in text and "'loss'" not in text:
                    return True
        if "OVERFLOW!" in text or "Gradient overflow" in text or "Overflow detected" in text \
                or "scale overflow!" in text:
            pair = after_marker(*_DS_OVERFLOW, text) or after_marker(*_APEX_OVERFLOW, text)
            if pair:
                m = pair[1]
                new = m.group(m.lastindex or 1)
                before = float(m.group(1)) if m.lastindex == 2 else None
                step = self._step_ctx if self._step_ctx is not None else self._tqdm_step
                self.s.scale(step, float(new), overflow=True, before=before, where=where)
                return True
        if "step=" in text:
            m = _DS_STEP.search(text)
            if m:
                self._fmt("deepspeed", lineno)
                self._step_ctx = int(m.group(1))
                self.a.skipped_iterations = max(self.a.skipped_iterations, int(m.group(2)))
                return True
            m = _DS_GLOBAL.search(text)
            if m:
                self._step_ctx = int(m.group(1))
        if "DLLL" in text:
            m = _DLLL.search(text)
            if m:
                return self._dllogger(m.group(1), where)
        if "step:" in text:
            if " - " in text and self._verl(text, where):
                return True
            m = _TITAN.search(text)
            if m:
                self._fmt("torchtitan", lineno)
                grad = parse_float(m.group(3)) if m.group(3) else None
                self.s.point(int(m.group(1)), float(m.group(2)), grad=grad, where=where)
                return True
        if "sav" in text or "Sav" in text:
            m = _HF_SAVED.search(text)
            if m:
                self._save(int(m.group(2)), m.group(1))
                return True
            step = _generic_saved(text)
            if step is not None:
                self._save(step, None)
                return True
        if "interval" in text or "_steps" in text:
            m = _INTERVAL.search(text)
            if m:
                self._interval(m.group(1), int(m.group(2)))
                return True
        if "Epoch [" in text:
            m = _MMCV.search(text)
            if m and self._openmmlab("mmcv", int(m.group(1)), int(m.group(2)), int(m.group(3)),
                                     text, where):
                return True
        if "(train)" in text:
            m = _MMENGINE.search(text)
            if m and self._openmmlab("mmengine", int(m.group(2)) if m.group(2) else None,
                                     int(m.group(3)), int(m.group(4)), text, where):
                return True
        if " loss=" in text and "epoch " in text:
            m = _FAIRSEQ.search(text)
            if m:
                self._fairseq(m, text, where)
                return True
        found = plain_step_loss(text)
        if found:
            self._fmt("plain", lineno)
            g = _PLAIN_GRAD.search(text)
            grad = parse_float(g.group(1)) if g else None
            self.s.point(int(found[0]), float(found[1]), grad=grad, where=where)
            return True
        return False

    def _verl(self, text: str, where: Where) -> bool:
        """A verl step line (`step:N - key:value - ...`): an RL loss is counted and drawn but
        kept from the spike detector (see `verl.RL_LOSS_KEYS`); NaN-ness, grad norm and step
        time feed the analyses. The learning rate is not read (see the `verl` module)."""
        found = verl.read_line(text)
        if found is None:
            return False
        self._fmt("verl", where[1])
        self.s.point(found.step, found.loss, grad=found.grad, time_ms=found.time_ms,
                     spikes=found.spikes, where=where)
        return True

    def _table_head(self, text: str, lineno: int) -> bool:
        """A PrintReport header naming the training loss column."""
        if _TABLE_HEAD.match(text) is None:
            return False
        cols = text.split()
        loss = next((cols.index(k) for k in TABLE_LOSS_KEYS if k in cols), None)
        if loss is None:
            return False
        step = cols.index("iteration") if "iteration" in cols else 0
        self._table = (len(cols), step, loss)
        self.table_line, self.table_rows = lineno, 0
        return True

    def table_waiting(self) -> bool:
        """A table header was read but none of its rows (they reach the reader only when the
        scanner reads them again)."""
        return self._table is not None and self.table_rows == 0

    def table_row(self, text: str, lineno: int) -> bool:
        """One row of numbers under the table header (as many as its columns)."""
        if self._table is None or self.table_rows >= TABLE_MAX_ROWS:
            return False
        ncols, step_col, loss_col = self._table
        cells = text.split()
        if len(cells) != ncols or not cells[step_col].isdigit():
            return False
        values = [parse_float(c) for c in cells]
        loss = values[loss_col]
        if loss is None or any(v is None for v in values):
            return False
        self._fmt("chainer", lineno)
        self.table_rows += 1
        self.s.point(int(cells[step_col]), loss, where=(self.source, lineno, text))
        return True

    def _fairseq(self, m: re.Match[str], text: str, where: Where) -> None:
        """A fairseq progress line: loss and gradient norm at the update it names."""
        self._fmt("fairseq", where[1])
        updates = _FAIRSEQ_UPDATES.search(text)
        epoch, i, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
        step = int(updates.group(1)) if updates else (epoch - 1) * n + i
        g = _FAIRSEQ_GRAD.search(text)
        self.s.point(step, float(m.group(4)), grad=parse_float(g.group(1)) if g else None,
                     where=where)

    def _yolo(self, text: str, where: Where) -> bool:
        """An Ultralytics YOLO epoch row: the sum of its loss columns at the epoch (v7 prints
        their total as one more column: the sum doubles, the series keeps its shape)."""
        m = _YOLO.match(text)
        if m is None:
            return False
        cells = m.group(3).split()
        losses = [parse_float(c) for c in cells[:-2]]
        if not 2 <= len(losses) <= 5 or not all(c.isdigit() for c in cells[-2:]):
            return False
        values = [v for v in losses if v is not None]
        if len(values) != len(losses):
            return False
        self._fmt("yolo", where[1])
        self.s.point(int(m.group(1)), sum(values), where=where)
        return True

    def _openmmlab(self, fmt: str, epoch: int | None, i: int, n: int, text: str,
                   where: Where) -> bool:
        """An OpenMMLab runner line (`[E][i/n]`): the epoch's batches add up to a global step."""
        loss = _MM_LOSS.search(text)
        if loss is None:
            return False
        self._fmt(fmt, where[1])
        g = _MM_GRAD.search(text)
        self.s.point((epoch - 1) * n + i if epoch is not None else i, float(loss.group(1)),
                     grad=parse_float(g.group(1)) if g else None, where=where)
        return True

    def _epoch_line(self, text: str, where: Where) -> bool:
        """torchvision's MetricLogger lines, or one summary line per epoch."""
        m = _TV_EPOCH.search(text)
        if m:
            loss = _MM_LOSS.search(text)
            if loss is None:
                return False
            self._fmt("torchvision", where[1])
            i, n = int(m.group(2)), int(m.group(3))
            lr = _TV_LR.search(text)
            if lr:
                self.learning_rate(parse_float(lr.group(1)))
            self.s.point(int(m.group(1)) * n + i, float(loss.group(1)), where=where)
            return True
        m = _EPOCH_STEP_LOSS.search(text)
        if m is not None and parse_float(m.group(3)) is not None:
            self._fmt("epoch-step", where[1])
            self._epoch_step_index += 1
            self.s.point(self._epoch_step_index, float(m.group(3)), where=where)
            return True
        m = _EPOCH_LOSS.search(text)
        if m is None or parse_float(m.group(2)) is None:
            return False
        self._fmt("epoch", where[1])
        self.s.point(int(m.group(1)), float(m.group(2)), where=where)
        return True

    def _keras(self, text: str, where: Where) -> bool:
        """Keras prints `Epoch i/n` on its own line, then the epoch's progress bar."""
        m = _KERAS_EPOCH.match(text)
        if m:
            self._keras_epoch = int(m.group(1))
            return True
        m = _KERAS_BAR.match(text)
        if m is None:
            return False
        self._fmt("keras", where[1])
        self._keras_index += 1
        step = self._keras_epoch if self._keras_epoch is not None else self._keras_index
        self.s.point(step, float(m.group(1)), where=where)
        return True

    def learning_rate(self, lr: float | None, grad: float | None = None,
                      printed: str = "") -> None:
        """Count the latest readings in a row that print the learning rate (and the grad norm)
        as exactly 0; and the longest run of them printed as Python prints a float zero ("0",
        "0.0"), which no small rate rounded to a fixed number of decimals ("0.0000",
        "0.000E+00") is."""
        if lr is None:
            return
        a = self.a
        a.lr_zero_tail = a.lr_zero_tail + 1 if lr == 0.0 else 0
        self._lr_exact_zeros = self._lr_exact_zeros + 1 if lr == 0.0 and printed.strip() in (
            "0", "0.0", "0.") else 0
        a.lr_zero_run = max(a.lr_zero_run, self._lr_exact_zeros)
        if grad is not None:
            a.grad_zero_tail = a.grad_zero_tail + 1 if grad == 0.0 else 0

    def _hint(self, text: str) -> None:
        if "eepSpeed" in text or "deepspeed" in text:
            self.hints.add("deepspeed")
        if "megatron.core" in text or "megatron/core" in text or "Megatron-Core" in text:
            self.hints.add("megatron-core")
        if "lightning" in text or "Lightning" in text:
            self.hints.add("lightning")
        if "nemo" in text or "NeMo" in text:
            self.hints.add("nemo")
        if "transformers" in text or "***** Running training *****" in text:
            self.hints.add("transformers")

    def _save(self, step: int, path: str | None) -> None:
        a = self.a
        if step not in a.saves and len(a.saves) < 4096:
            a.saves.append(step)
            a.saves.sort()
        if path and len(a.save_paths) < 4096:
            a.save_paths[step] = path

    def _interval(self, key: str, value: int) -> None:
        if value <= 0:
            return
        if key.startswith("save"):
            self.a.save_interval = value
        elif key.startswith("log"):
            if key == "logging_steps":
                self.logging_steps = value
            self.log_interval = value
            self.s.set_interval(value)

    # ---- Megatron family -----------------------------------------------------------------
    def _megatron(self, step: int, text: str, where: Where) -> None:
        fields = megatron_fields(text)
        fmt = "megatron"
        if "global_step" in fields:  # NeMo 2: "iteration i/n" counts within the epoch
            g = parse_float(fields["global_step"])
            if g is not None:
                step = int(g)
            fmt = "nemo"
        elif "lm_loss" in fields or "samples/sec" in text:
            fmt = "gpt-neox"
        elif "consumed tokens" in fields or "actual seqlen" in fields or "TFLOPs" in fields:
            self.hints.add("megatron-deepspeed")
        elif text.lstrip().startswith("[20") or "TFLOP/s/GPU" in text:
            self.hints.add("megatron-lm")  # timestamped lines: Megatron-LM core 0.6 or later
        self._fmt(fmt, where[1])
        if len(self._steps) < 8 and self.log_interval is None:
            self._steps.append(step)
            gaps = [b - a for a, b in zip(self._steps, self._steps[1:], strict=False) if b > a]
            if gaps:
                self.s.set_interval(min(gaps))
        key = megatron_loss_key(fields)
        loss = parse_float(fields[key]) if key else None
        time_ms = parse_float(fields.get("elapsed time per iteration (ms)", ""))
        if time_ms is None and "train_step_timing in s" in fields:
            t = parse_float(fields["train_step_timing in s"])
            time_ms = t * 1000 if t is not None else None
        scale = parse_float(fields.get("loss scale", ""))
        grad = parse_float(fields.get("grad norm", fields.get("grad_norm", "")))
        self.learning_rate(parse_float(fields.get("learning rate", "")), grad)
        skipped = _int(fields.get("number of skipped iterations"))
        nans = _int(fields.get("number of nan iterations"))
        vanished = False
        if loss is None:
            # Megatron prints a loss only when its interval average is > 0: a NaN average is
            # omitted. A line without it, whose iterations were not all skipped, lost it to NaN.
            vanished = self._megatron_had_loss and not skipped and not nans
        else:
            self._megatron_had_loss = True
        self.s.point(step, loss, grad=grad, scale=scale, time_ms=time_ms, nan_iters=nans,
                     skipped=skipped, vanished=vanished, where=where)

    # ---- Hugging Face Trainer ------------------------------------------------------------
    def _hf(self, loss: str, text: str, where: Where) -> None:
        self._fmt("hf-trainer", where[1])
        self._hf_flush()
        extra = dict(_HF_FIELD.findall(text))
        self._hf_index += 1
        grad = parse_float(extra["grad_norm"]) if "grad_norm" in extra else None
        if "epoch" in extra and self.a.first_epoch is None:
            self.a.first_epoch = parse_float(extra["epoch"])
        if "learning_rate" in extra:
            self.learning_rate(parse_float(extra["learning_rate"]), grad, extra["learning_rate"])
        record = (float(loss), grad, where)
        if "step" in extra:
            self._hf_emit(int(float(extra["step"])), record)
            return
        # The bar is redrawn right after the dict (tqdm.write) showing the global step: wait
        # for it; another dict or the end of the source resolves without it.
        self._hf_pending = record
        if "|" in text:
            m = _TQDM.search(text[text.find("}") + 1:])
            if m:
                self._tqdm(int(m.group(1)))

    def _hf_flush(self) -> None:
        rec = self._hf_pending
        if rec is None:
            return
        self._hf_pending = None
        if self.logging_steps:
            step = self._hf_index * self.logging_steps
        elif self._tqdm_step is not None:
            step = self._tqdm_step
            last = self.a.last_step
            if last is not None and step <= last:  # the bar was not redrawn: one gap further
                step = last + max(1, self._hf_gap)
        else:
            step = self._hf_index
            note = ("HF Trainer steps are log-entry numbers: the log shows neither the progress "
                    "bar nor logging_steps")
            if note not in self.a.notes:
                self.a.notes.append(note)
        self._hf_emit(step, rec)

    def _hf_emit(self, step: int, rec: tuple) -> None:
        loss, grad, where = rec
        last = self.a.last_step
        if last is not None and step > last:
            self._hf_gap = step - last
        if self.logging_steps:
            self.s.set_interval(self.logging_steps)
        self.s.point(step, loss, grad=grad, where=where)

    def _tqdm(self, n: int) -> None:
        self._tqdm_step = n
        if self._hf_pending is not None:
            rec = self._hf_pending
            self._hf_pending = None
            self._hf_emit(n, rec)

    # ---- Lightning / NeMo 1 progress bars ------------------------------------------------
    def _lightning(self, m: re.Match, where: Where) -> bool:
        epoch = int(m.group(1))
        counter = int(m.group(2) or m.group(4))
        post = dict(_POSTFIX.findall(m.group(5)))
        key = next((k for k in ("reduced_train_loss", "train_loss_step", "train_loss", "loss")
                    if k in post), None)
        if key is None:
            return False
        self._fmt("lightning", where[1])
        if epoch != self._epoch:
            if epoch > self._epoch >= 0:
                self._epoch_offset += self._epoch_max
            self._epoch, self._epoch_max = epoch, 0
        self._epoch_max = max(self._epoch_max, counter)
        total = int(m.group(3)) if m.group(3) else 0
        # batches per epoch from the bar's total when it shows one, else summed as seen
        step = epoch * total + counter if total else self._epoch_offset + counter
        g = post.get("global_step")
        if g is not None and "e" not in g.lower():
            step = int(float(g))
        elif g is None:
            note = ("Lightning steps are counted from the progress bar (batches summed over "
                    "epochs): with accumulate_grad_batches > 1 divide them by it")
            if note not in self.a.notes:
                self.a.notes.append(note)
        self.s.point(step, float(post[key]), where=where)
        return True

    # ---- DLLogger --------------------------------------------------------------------------
    def _dllogger(self, blob: str, where: Where) -> bool:
        try:
            rec = json.loads(blob)
        except ValueError:
            return False
        if not isinstance(rec, dict) or not isinstance(rec.get("data"), dict):
            return False
        data = rec["data"]
        key = next((k for k in data if k.endswith("loss") and not k.startswith(("val", "eval"))
                    and not isinstance(data[k], bool)), None)
        raw = rec.get("step")
        if key is None or not isinstance(data.get(key), int | float | str):
            return False
        ints = [v for v in (raw if isinstance(raw, list) else [raw]) if isinstance(v, int)]
        if not ints:
            return False
        step = ints[-1]
        if len(ints) >= 2:  # (epoch, iteration): iterations may restart every epoch
            epoch = ints[0]
            if self._dl_epoch is not None and epoch > self._dl_epoch and step <= self._dl_max:
                self._dl_offset = self._dl_last
            self._dl_epoch, self._dl_max = epoch, step
            step += self._dl_offset
            self._dl_last = step
        value = parse_float(str(data[key]))
        if value is None:
            return False
        self._fmt("dllogger", where[1])
        self.s.point(step, value, where=where)
        return True

    def flush(self) -> None:
        """End of a source: resolve a pending HF dict."""
        self._hf_flush()

    def framework(self) -> str | None:
        """The framework that wrote the log, from the formats read and the hints seen."""
        if not self.formats:
            return None
        fmt = max(self.formats, key=lambda k: self.formats[k])
        if fmt == "megatron":
            if "megatron-deepspeed" in self.hints or "deepspeed" in self.hints:
                return "megatron-deepspeed"
            if "megatron-core" in self.hints or "megatron-lm" in self.hints:
                return "megatron-lm"
            return "megatron"
        if fmt == "hf-trainer":
            return "hf-trainer"
        if fmt == "lightning":
            return "nemo" if "nemo" in self.hints else "lightning"
        return fmt


def _int(text: str | None) -> int:
    if not text:
        return 0
    try:
        return int(float(text))
    except ValueError:
        return 0



def _generic_saved(text: str) -> int | None:
    """The step of a generic "saved checkpoint ... step N" line: the first step number after
    the first "checkpoint"/"model" after the first "saved"/"saving" of a line (what the lazy
    regex found: a later "saving" can only find the same step or none)."""
    for line in text.split("\n"):
        saving = _SAVING.search(line)
        what = _SAVED_WHAT.search(line, saving.end()) if saving else None
        step = _SAVED_STEP.search(line, what.end()) if what else None
        if step is not None and len(step.group(1)) <= 15:
            return int(step.group(1))
    return None
