"""What a triage found that a fix command can use: the numbers of this incident, by name.

A fix is written for every incident, so its commands hold placeholders (`<GPU_INDEX>`,
`<ITERATION>`, `<BUS_ID>`) or examples. The walk that triage started knows some of those
numbers: the GPU that ran out of memory, the checkpoint to resume from, the PCI bus of the GPU
that raised an Xid. `known_from` reads them from the chosen finding, each with where it came
from, and the exact recovery command when triage built one for the framework that wrote the
log. The fix's layout (`export.fixview`) puts them into the commands people copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainmedic.redact import redact_text
from trainmedic.textsafe import inert, inert_line

if TYPE_CHECKING:
    from trainmedic.triage.attachment import TriageAttachment
    from trainmedic.triage.report import Finding


@dataclass(frozen=True)
class KnownValue:
    """One number of this incident, named as fix commands name their placeholders."""

    name: str  # the placeholder without its brackets: "GPU_INDEX" fills `<GPU_INDEX>`
    value: str
    why: str  # what the value is, in words: "the last checkpoint saved before the spike"


@dataclass(frozen=True)
class LogCommand:
    """A command triage wrote for this incident (for the framework the log came from)."""

    do: str
    code: str
    lang: str = "text"


@dataclass(frozen=True)
class KnownFromLog:
    """Every value and command a finding gives; `link` is the node the commands belong to."""

    link: str = ""
    where: str = ""  # the log line the finding quotes first: "rank1.log:2"
    values: tuple[KnownValue, ...] = ()
    commands: tuple[LogCommand, ...] = ()
    advice: str = ""  # triage's own words for the way back, when it planned one

    def get(self, name: str) -> KnownValue | None:
        return next((v for v in self.values if v.name == name), None)

    def __bool__(self) -> bool:
        return bool(self.values or self.commands or self.advice)


NOTHING = KnownFromLog()


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def known_from(triage: TriageAttachment | None) -> KnownFromLog:
    """The values and commands of the finding a walk was started from (NOTHING without one)."""
    finding = triage.finding if triage is not None else None
    if finding is None:
        return NOTHING
    values: dict[str, KnownValue] = {}

    def add(name: str, value: object, why: str) -> None:
        if value is not None and str(value).strip() and name not in values:
            values[name] = KnownValue(name, _safe_line(str(value).strip()), why)

    details = finding.details
    recovery = details.get("recovery")
    commands: list[LogCommand] = []
    advice = ""
    if isinstance(recovery, Mapping):  # triage planned the way back for the log's framework
        add("ITERATION", _int(recovery.get("checkpoint")),
            "the last checkpoint the log says was saved before the trouble")
        add("CKPT_DIR", recovery.get("checkpoint_path"), "where the log says it was saved")
        advice = inert(redact_text(str(recovery.get("text") or "")))
        commands = _recovery_commands(recovery)
    spike = details.get("spike")
    if isinstance(spike, Mapping):
        add("ITERATION", _int(spike.get("checkpoint_before")),
            "the last checkpoint saved before the spike")
        start, end = _int(spike.get("start")), _int(spike.get("end"))
        add("SPIKE_START", start, "the first iteration of the spike")
        add("SPIKE_END", end if end is not None else _int(spike.get("peak")),
            "the iteration the loss was back to normal" if end is not None
            else "the peak of the spike (the loss never came back)")
    add("GPU_INDEX", _int(details.get("gpu")), "the GPU the log names")
    pci = details.get("pci")
    if isinstance(pci, list) and len(pci) == 1:
        add("BUS_ID", pci[0], "the PCI bus of the GPU that raised the Xid")
    if len(finding.ranks) == 1:
        add("RANK", finding.ranks[0], "the rank the log names")
    return KnownFromLog(finding.link, _where(finding), tuple(values.values()), tuple(commands),
                        advice)


def _recovery_commands(recovery: Mapping[str, object]) -> list[LogCommand]:
    """The command triage wrote for the log's framework; for a Megatron log that does not say
    which Megatron wrote it, the command of each (as the recovery's own text names them)."""
    command = recovery.get("command")
    framework = str(recovery.get("framework") or "")
    if isinstance(command, str) and command.strip():
        name = FRAMEWORKS.get(framework, framework)
        return [LogCommand(f"{name}: the way back triage planned for this log"
                           if name and framework != "unknown" else
                           "The way back triage planned for this log",
                           _safe_line(command.strip()))]
    skip = recovery.get("skip")
    ranges = [(a, b) for a, b in (r for r in skip if isinstance(r, list | tuple) and len(r) == 2)
              if isinstance(a, int) and isinstance(b, int)] if isinstance(skip, list) else []
    if framework != "megatron" or not ranges:
        return []
    from trainmedic.triage.loss.recovery import megatron_lm_skip_values, merge_ranges

    checkpoint = _int(recovery.get("checkpoint"))
    folder = _safe_line(str(recovery.get("checkpoint_path") or "$CKPT_DIR"))
    load = f"--load {folder}"
    step = f" --ckpt-step {checkpoint}" if checkpoint is not None else ""
    spans = " ".join(f"{a}-{b}" for a, b in merge_ranges(ranges))
    return [
        LogCommand("If NVIDIA Megatron-LM (core 0.12+) wrote the log: resume and skip",
                   f"{load}{step} --iterations-to-skip {megatron_lm_skip_values(ranges)}"),
        LogCommand("If a Megatron-DeepSpeed fork wrote it: resume and skip",
                   f"{load} --skip-train-iteration-range {spans}"),
    ]


FRAMEWORKS = {"megatron-lm": "NVIDIA Megatron-LM", "megatron-deepspeed": "Megatron-DeepSpeed",
              "hf-trainer": "Hugging Face Trainer", "deepspeed": "DeepSpeed",
              "lightning": "Lightning", "nemo": "NeMo", "torchtitan": "torchtitan"}


def _safe_line(text: str) -> str:
    """A value from a log, as it may reach a terminal and a command people paste: no secret,
    no control character, one line."""
    return inert_line(redact_text(text))


def _where(finding: Finding) -> str:
    return finding.evidence[0].where if finding.evidence else ""


def describe(known: KnownFromLog) -> list[str]:
    """One line per value, for the "from your log" block: `ITERATION = 29200: the last ...`."""
    return [f"{v.name} = {v.value}: {v.why}" for v in known.values]

