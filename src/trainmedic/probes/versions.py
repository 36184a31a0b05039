"""The `versions` probe: the software stack, read from package metadata without importing it.

Importing torch takes seconds and can itself crash on a broken CUDA install; maintainers still
ask for torch, CUDA, NCCL, TE, flash-attn and driver versions first. Everything here comes
from `importlib.metadata`, torch's own `version.py` text and /proc/driver/nvidia/version.
"""

from __future__ import annotations

import platform
import re
import sys
from importlib import metadata
from pathlib import Path

from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult

NAME = "versions"
DRIVER_FILE = Path("/proc/driver/nvidia/version")
# fact -> distribution names to try, first found wins
PACKAGES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "transformer_engine": ("transformer_engine", "transformer-engine", "transformer_engine_torch"),
    "flash_attn": ("flash_attn", "flash-attn"),
    "apex": ("apex",),
    "megatron_core": ("megatron_core", "megatron-core"),
    "deepspeed": ("deepspeed",),
    "accelerate": ("accelerate",),
    "transformers": ("transformers",),
    "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11", "nvidia-nccl"),
}
# Minimum Linux driver per CUDA major (CUDA minor-version compatibility, NVIDIA release notes).
MIN_DRIVER = {11: (450, 80), 12: (525, 60), 13: (580, 0)}
_DRIVER_RE = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_TORCH_CUDA_RE = re.compile(r"^cuda\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)


def dist_version(names: tuple[str, ...]) -> str:
    for name in names:
        try:
            return metadata.version(name)
        except Exception:  # not installed (PackageNotFoundError), or broken metadata
            continue
    return ""


def torch_cuda_version(torch_version: str) -> str:
    """CUDA version torch was built with, from torch/version.py text (no import)."""
    try:
        dist = metadata.distribution("torch")
        text = Path(str(dist.locate_file("torch/version.py"))).read_text(errors="replace")
        match = _TORCH_CUDA_RE.search(text)
        if match and match.group(1) not in {"None", ""}:
            return match.group(1)
        if match or "cuda: Optional[str] = None" in text:
            return ""
    except (metadata.PackageNotFoundError, OSError, TypeError):
        pass
    local = re.search(r"\+cu(\d+)(\d)$", torch_version)  # 2.5.1+cu124 -> 12.4
    return f"{local.group(1)}.{local.group(2)}" if local else ""


def driver_version(path: Path = DRIVER_FILE) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    match = _DRIVER_RE.search(text)
    return match.group(1) if match else ""


def driver_too_old(cuda: str, driver: str) -> str:
    """A line explaining the mismatch, or "" when the driver can run this CUDA."""
    try:
        cuda_major = int(cuda.split(".")[0])
        parts = [int(p) for p in driver.split(".")[:2]]
    except (ValueError, IndexError):
        return ""
    need = MIN_DRIVER.get(cuda_major)
    if need is None or len(parts) < 2:
        return ""
    if tuple(parts) < need:
        return (
            f"torch is built for CUDA {cuda} which needs driver >= {need[0]}.{need[1]:02d}; "
            f"this node runs {driver}"
        )
    return ""


def collect(driver_file: Path = DRIVER_FILE) -> ProbeResult:
    facts: dict[str, object] = {"python": platform.python_version()}
    for fact, names in PACKAGES.items():
        facts[fact] = dist_version(names)
    facts["torch_cuda"] = torch_cuda_version(str(facts["torch"])) if facts["torch"] else ""
    facts["driver"] = driver_version(driver_file)
    mismatch = driver_too_old(str(facts["torch_cuda"]), str(facts["driver"]))
    facts["driver_too_old"] = bool(mismatch)
    order = [
        "python",
        "torch",
        "torch_cuda",
        "nccl",
        "driver",
        "transformer_engine",
        "flash_attn",
        "apex",
        "megatron_core",
        "deepspeed",
        "accelerate",
        "transformers",
    ]
    raw = "\n".join(f"{k}: {facts[k] or '(not installed)'}" for k in order)
    raw += f"\nexecutable: {sys.executable}"
    evidence = {k: f"{k} {facts[k]}" for k in order if facts[k]}
    if mismatch:
        evidence["driver_too_old"] = mismatch
    shown = [f"{k} {facts[k]}" for k in ("torch", "torch_cuda", "nccl", "driver") if facts[k]]
    summary = ", ".join(shown) if shown else "torch is not installed in this Python"
    summary = summary.replace("torch_cuda", "CUDA")
    if not facts["torch"]:
        summary += f" ({sys.executable}; run trainmedic from the training environment)"
    if mismatch:
        return ProbeResult(NAME, "fail", mismatch, facts, raw, evidence=evidence)
    return ProbeResult(NAME, "ok", summary, facts, raw, evidence=evidence)


def probe(budget: Budget, _context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    return collect()
