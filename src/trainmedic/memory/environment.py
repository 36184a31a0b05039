"""Environment findings for preflight, from the `env` probe.

The launch script's own `export`s win over the current shell, because that is what the
training processes will see. If the env probe's analysis fails, preflight says so in one warning
and carries on: a preflight must never end in a traceback.
"""

from __future__ import annotations

import os

from trainmedic.memory.config import MemoryConfig


def _env_facts(exported: dict[str, str]) -> tuple[dict[str, object] | None, str]:
    from trainmedic.probes.env import examine

    merged = {**os.environ, **exported}
    try:
        return dict(examine(merged).facts), "env probe (script exports applied)"
    except Exception as exc:
        return None, f"env probe failed ({type(exc).__name__}: {exc})"


def environment_checks(cfg: MemoryConfig, exported: dict[str, str]) -> list[dict[str, str]]:
    facts, source = _env_facts(exported)
    if facts is None:
        return [{"name": "environment", "status": "warn",
                 "message": f"environment not examined: {source}"}]
    out: list[dict[str, str]] = []

    def add(name: str, bad: bool, good: str, problem: str) -> None:
        out.append({"name": name, "status": "warn" if bad else "pass",
                    "message": (problem if bad else good) + f" [{source}]"})

    myths = facts.get("myth_vars") or []
    add("env-no-effect-vars", bool(myths), "no variables that nothing reads",
        f"set but read by no library: {', '.join(map(str, myths))} (e.g. NCCL_TIMEOUT; the "
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
