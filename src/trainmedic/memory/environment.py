"""Environment checks for preflight, from the facts of the `env` probe.

The caller examines the environment the training processes will see (the launch script's own
`export`s win over the current shell) and passes the facts in; when that examination failed,
preflight says so in one warning and carries on: a preflight must never end in a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping

from trainmedic.memory.checks import Check
from trainmedic.memory.config import MemoryConfig


def environment_checks(cfg: MemoryConfig, facts: Mapping[str, object] | None,
                       source: str) -> list[Check]:
    """Checks over `facts` (the env probe's, None when it failed; `source` says why or how)."""
    if facts is None:
        return [Check("environment", "warn", f"environment not examined: {source}")]
    out: list[Check] = []

    def add(name: str, bad: bool, good: str, problem: str) -> None:
        out.append(Check(name, "warn" if bad else "pass", (problem if bad else good)
                         + f" [{source}]"))

    myths = facts.get("myth_vars")
    myth_names = [str(m) for m in myths] if isinstance(myths, list) else []
    add("env-no-effect-vars", bool(myth_names), "no variables that nothing reads",
        f"set but read by no library: {', '.join(myth_names)} (e.g. NCCL_TIMEOUT; the "
        "collective timeout is --distributed-timeout-minutes)")
    add("env-launch-blocking", bool(facts.get("launch_blocking")),
        "CUDA_LAUNCH_BLOCKING is off",
        "CUDA_LAUNCH_BLOCKING=1 serialises every kernel: for debugging only")
    if cfg.tp > 1 or cfg.sequence_parallel:
        add("env-max-connections", not facts.get("max_connections_one"),
            "CUDA_DEVICE_MAX_CONNECTIONS=1 for TP communication overlap",
            "CUDA_DEVICE_MAX_CONNECTIONS is not 1: Megatron needs it with TP/sequence parallel "
            "to order communication before compute")
    add("env-async-error-handling", facts.get("async_error_handling") is False,
        "NCCL errors and timeouts tear the job down (TORCH_NCCL_ASYNC_ERROR_HANDLING)",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=0: a NCCL timeout will hang instead of failing")
    return out
