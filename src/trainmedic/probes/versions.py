"""The `versions` probe: the job's software stack, read from package metadata without importing it.

Importing torch takes seconds and can itself crash on a broken CUDA install; maintainers still
ask for torch, CUDA, NCCL, TE, flash-attn and driver versions first. The versions that matter
are the job's: the probe runs the job's interpreter (see `job_env.job_python`) on a small inline
script that reads `importlib.metadata` and torch's own `version.py` text, as an argument list
under the probe's time limit. trainmedic's own interpreter is read only when nothing points
elsewhere and it looks like a training environment (it has torch and is not a pipx/uv tool
venv); otherwise the probe says `unknown: not the job's environment` and lends no fact, so no
answer is suggested from the wrong Python. The driver comes from /proc/driver/nvidia/version.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from trainmedic.probes.base import NO_CONTEXT, Budget, ProbeContext, ProbeResult, quoted
from trainmedic.probes.job_env import PYTHON_ENV, JobPython, job_python, tool_venv
from trainmedic.probes.subproc import run_cmd

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
_VERSION_TEXT = re.compile(r"^[\w.+!-]{1,64}$")
ORDER = ("python", "torch", "torch_cuda", "nccl", "driver", "transformer_engine", "flash_attn",
         "apex", "megatron_core", "deepspeed", "accelerate", "transformers")

# Runs in the job's interpreter (any Python 3.8+; older ones say so): metadata only, no import
# of the packages themselves. argv[1] is PACKAGES as JSON; one JSON line comes back.
READER = r"""
import json, platform, sys
out = {"python": platform.python_version(), "executable": sys.executable,
       "prefix": sys.prefix, "versions": {}, "torch_version_py": ""}
try:
    from importlib import metadata as md
except ImportError:
    md = None
    out["error"] = "no importlib.metadata (Python older than 3.8)"
if md is not None:
    for fact, names in json.loads(sys.argv[1]).items():
        for name in names:
            try:
                out["versions"][fact] = md.version(name)
                break
            except Exception:
                pass
    try:
        with open(str(md.distribution("torch").locate_file("torch/version.py"))) as handle:
            out["torch_version_py"] = handle.read(8192)
    except Exception:
        pass
print(json.dumps(out))
"""


def torch_cuda_version(torch_version: str, version_py: str = "") -> str:
    """CUDA version torch was built with: torch/version.py text, else the `+cu124` tag."""
    match = _TORCH_CUDA_RE.search(version_py)
    if match:
        return "" if match.group(1) in {"None", ""} else match.group(1)
    if "cuda: Optional[str] = None" in version_py or re.search(r"^cuda\s*=\s*None", version_py,
                                                               re.MULTILINE):
        return ""
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


def _text(value: object) -> str:
    """A version string as the job's Python printed it; anything odd reads as not installed."""
    return value if isinstance(value, str) and _VERSION_TEXT.match(value) else ""


def read_interpreter(python: str, timeout: float) -> tuple[dict[str, object] | None, str, str]:
    """(what the reader printed, raw output, why it failed) for the interpreter `python`."""
    # -E: trainmedic's own PYTHONPATH/PYTHONHOME must not leak into the job's interpreter
    res = run_cmd([python, "-E", "-c", READER, json.dumps(PACKAGES)], timeout)
    raw = f"$ {python} -E -c <metadata reader>\n{res.combined()[:4000]}"
    if res.error:
        return None, raw, res.error
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("versions"), dict):
        why = res.first_error_line() if res.returncode else (lines[-1] if lines else "no output")
        return None, raw, f"it printed {quoted(why)} (exit {res.returncode})"
    return data, raw, ""


def build_result(data: dict[str, object], job: JobPython, raw: str,
                 driver_file: Path = DRIVER_FILE) -> ProbeResult:
    """The result for what the job's interpreter printed."""
    versions = data.get("versions")
    found = versions if isinstance(versions, dict) else {}
    facts: dict[str, object] = {"python": _text(data.get("python"))}
    for fact in PACKAGES:
        facts[fact] = _text(found.get(fact))
    version_py = data.get("torch_version_py")
    facts["torch_cuda"] = torch_cuda_version(
        str(facts["torch"]), version_py if isinstance(version_py, str) else "") \
        if facts["torch"] else ""
    facts["driver"] = driver_version(driver_file)
    mismatch = driver_too_old(str(facts["torch_cuda"]), str(facts["driver"]))
    facts["driver_too_old"] = bool(mismatch)
    where = f"in {job.path} ({job.source})"
    evidence = {k: f"{k} {facts[k]} {where}" if k != "driver" else f"driver {facts[k]} "
                "(this node)" for k in ORDER if facts[k]}
    for fact in PACKAGES:
        if not facts[fact]:
            evidence[fact] = f"{fact} is not installed {where}"
    if mismatch:
        evidence["driver_too_old"] = mismatch
    raw += "\n" + "\n".join(f"{k}: {facts[k] or '(not installed)'}" for k in ORDER)
    source = f"{job.path} ({job.source})"
    if mismatch:
        return ProbeResult(NAME, "fail", mismatch, facts, raw, evidence=evidence, source=source)
    shown = [f"{k} {facts[k]}" for k in ("torch", "torch_cuda", "nccl", "driver") if facts[k]]
    summary = ", ".join(shown).replace("torch_cuda", "CUDA") if shown else \
        "torch is not installed in the job's Python"
    return ProbeResult(NAME, "ok", summary, facts, raw, evidence=evidence, source=source)


def _not_the_job(job: JobPython, why: str, raw: str, driver_file: Path) -> ProbeResult:
    driver = driver_version(driver_file)
    node = f"; driver {driver} on this node" if driver else ""
    return ProbeResult(
        NAME, "unknown",
        f"unknown: not the job's environment ({why}); give the job's Python with --python "
        f"PATH or {PYTHON_ENV}{node}", raw=raw, source=f"{job.path} ({job.source})")


def collect(job: JobPython, timeout: float, driver_file: Path = DRIVER_FILE) -> ProbeResult:
    """Versions in the interpreter `job`; `unknown` when it is not (or may not be) the job's."""
    if job.own and tool_venv():
        return _not_the_job(job, "trainmedic runs from its own pipx/uv venv", "", driver_file)
    if not job.path:
        return _not_the_job(job, job.source, "", driver_file)
    data, raw, error = read_interpreter(job.path, timeout)
    if data is None:
        return ProbeResult(NAME, "unknown", f"could not read the job's Python {job.path} "
                           f"({job.source}): {error}", raw=raw,
                           source=f"{job.path} ({job.source})")
    versions = data.get("versions")
    if job.own and not (isinstance(versions, dict) and versions.get("torch")):
        return _not_the_job(job, "trainmedic's own Python has no torch", raw, driver_file)
    return build_result(data, job, raw, driver_file)


def probe(budget: Budget, context: ProbeContext = NO_CONTEXT) -> ProbeResult:
    return collect(job_python(context), budget.remaining())
