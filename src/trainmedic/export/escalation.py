"""What to collect when no fix helped: the maintainers' minimum information for a bug report.

One table, `MINIMUM`, feeds both readers: the runbook's last section lists every item with the
command that collects it, and the incident report's checklist asks for the items it can check,
filled in with what the walk already knows (`fill` names which fact answers the item).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# What the incident report fills an item from (see `export.report`); None: never known.
Fill = Literal["repo", "versions", "launch", "logs"] | None


@dataclass(frozen=True)
class Ask:
    """One item of the minimum."""

    what: str  # as the runbook lists it
    command: str | None  # the command that collects it, or None
    checklist: str | None = None  # its line in the report's checklist; None: runbook only
    hint: str = ""  # how to tick it, when the report cannot
    fill: Fill = None
    app_hint: str = ""  # the same inside the app, where command-line flags mean nothing


MINIMUM: tuple[Ask, ...] = (
    Ask("The framework commit (Megatron-LM, NeMo, DeepSpeed...) and whether the tree is dirty",
        "git -C /path/to/Megatron-LM rev-parse HEAD && git -C /path/to/Megatron-LM status --short",
        "Framework commit (Megatron-LM or the framework you run)",
        "rerun with --repo PATH, or: git -C PATH rev-parse HEAD", "repo",
        "in a shell: git -C PATH rev-parse HEAD, or trainmedic report --repo PATH"),
    Ask("PyTorch, CUDA, NCCL and TransformerEngine versions",
        'python -c "import torch; print(torch.__version__, torch.version.cuda, '
        'torch.cuda.nccl.version())"\n'
        'pip list 2>/dev/null | grep -i -E "torch|transformer|flash|apex|megatron|deepspeed"',
        "PyTorch / CUDA / NCCL / TransformerEngine versions",
        "rerun with --probe, or run `trainmedic probe versions --json`", "versions",
        "run the probes (^r) from the walk, then open the report again"),
    Ask("The full launch command, copied as run (every flag and environment variable)", None,
        "The full launch command, copied as run",
        "paste the exact command (sbatch script, torchrun line, environment)", "launch"),
    Ask("Complete logs of every rank with NCCL and torch.distributed debugging on",
        "export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL",
        "Complete logs with NCCL_DEBUG=INFO and TORCH_DISTRIBUTED_DEBUG=DETAIL",
        "export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL, rerun, attach every rank's log",
        "logs"),
    Ask("The machine's own evidence from every node",
        "trainmedic probe --json > probe-$(hostname).json"),
    Ask("What the logs say", "trainmedic triage logs/*.log --json > triage.json"),
    Ask("Whether it reproduces with a smaller configuration (TP=1 PP=1, fewer nodes)", None,
        "Does it reproduce with a smaller configuration (TP=1 PP=1)?", "answer yes/no"),
    Ask("Whether it reproduces in an NGC PyTorch container", None,
        "Does it reproduce in an NGC PyTorch container?", "answer yes/no, with the image tag"),
)


def escalation_lines(tree_id: str) -> list[str]:
    lines = [
        "If no fix above helped, collect the following and attach it to the issue you open "
        "with the framework's maintainers (or your cluster's admins):",
        "",
    ]
    for index, ask in enumerate(MINIMUM, start=1):
        lines.append(f"{index}. {ask.what}.")
        if ask.command:
            lines += ["", "   ```bash", *("   " + c for c in ask.command.splitlines()), "   ```"]
        lines.append("")
    lines += [
        f"`trainmedic walk {tree_id}` followed by `trainmedic report -o incident.md` writes most "
        "of this into one Markdown report (path taken, evidence, probe results, versions), with "
        "secrets redacted. Read it before you attach it: redaction is pattern based.",
    ]
    return lines
