"""What to collect when no fix helped: the maintainers' minimum (seed 000 §11.9) as commands.

The runbook's last section. The incident report's checklist (`report._checklist`) asks for the
same items with what the walk already knows filled in: change the two together.
"""

from __future__ import annotations

# (what, command or None): each item of the minimum information for a bug report.
COLLECT: tuple[tuple[str, str | None], ...] = (
    ("The framework commit (Megatron-LM, NeMo, DeepSpeed...) and whether the tree is dirty",
     "git -C /path/to/Megatron-LM rev-parse HEAD && git -C /path/to/Megatron-LM status --short"),
    ("PyTorch, CUDA, NCCL and TransformerEngine versions",
     'python -c "import torch; print(torch.__version__, torch.version.cuda, '
     'torch.cuda.nccl.version())"\n'
     'pip list 2>/dev/null | grep -i -E "torch|transformer|flash|apex|megatron|deepspeed"'),
    ("The full launch command, copied as run (every flag and environment variable)", None),
    ("Complete logs of every rank with NCCL and torch.distributed debugging on",
     "export NCCL_DEBUG=INFO TORCH_DISTRIBUTED_DEBUG=DETAIL"),
    ("The machine's own evidence from every node",
     "trainmedic probe --json > probe-$(hostname).json"),
    ("What the logs say", "trainmedic triage logs/*.log --json > triage.json"),
    ("Whether it reproduces with a smaller configuration (TP=1 PP=1, fewer nodes)", None),
    ("Whether it reproduces in an NGC PyTorch container", None),
)


def escalation_lines(tree_id: str) -> list[str]:
    lines = [
        "If no fix above helped, collect the following and attach it to the issue you open "
        "with the framework's maintainers (or your cluster's admins):",
        "",
    ]
    for index, (what, command) in enumerate(COLLECT, start=1):
        lines.append(f"{index}. {what}.")
        if command:
            lines += ["", "   ```bash", *("   " + c for c in command.splitlines()), "   ```"]
        lines.append("")
    lines += [
        f"`trainmedic walk {tree_id}` followed by `trainmedic report -o incident.md` writes most "
        "of this into one Markdown report (path taken, evidence, probe results, versions), with "
        "secrets redacted. Read it before you attach it: redaction is pattern based.",
    ]
    return lines
