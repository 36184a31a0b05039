"""The versions probe reads the job's Python, never trainmedic's own by default (F4)."""

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic.probes import versions
from trainmedic.probes.base import ProbeContext
from trainmedic.probes.job_env import JobPython, job_python

from .helpers import check_types, fixture_path

TORCH_VERSION_PY = (  # the shape of torch/version.py as torch writes it
    "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', "
    "'hip']\n__version__ = '2.5.1+cu124'\ndebug = False\ncuda: Optional[str] = '12.4'\n"
    "git_version = 'abc'\nhip: Optional[str] = None\n")


def fake_dist(site: Path, name: str, version: str, files: dict[str, str] | None = None) -> None:
    """A minimal installed distribution that importlib.metadata can find in `site`."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = []
    for rel, text in (files or {}).items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        record.append(f"{rel},,")
    (info / "RECORD").write_text("\n".join(record) + "\n")


@pytest.fixture(scope="module")
def job_venv(tmp_path_factory) -> tuple[Path, Path]:
    """A second, real venv (the job's): (its python, its site-packages)."""
    root = tmp_path_factory.mktemp("jobenv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=120)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    site = Path(purelib)
    fake_dist(site, "torch", "2.5.1+cu124", {"torch/version.py": TORCH_VERSION_PY})
    fake_dist(site, "nvidia-nccl-cu12", "2.21.5")
    fake_dist(site, "transformer_engine", "1.12.0")
    fake_dist(site, "megatron-core", "0.10.0")
    return python, site


def fake_python(folder: Path, body: str) -> Path:
    """An executable named python that runs `body` (sh), to play a job interpreter."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def printing(folder: Path, payload: dict) -> Path:
    return fake_python(folder, f"cat <<'EOF'\n{json.dumps(payload)}\nEOF")


def test_versions_come_from_the_jobs_own_venv(job_venv):
    python, _site = job_venv
    job = JobPython(str(python), "--python")
    result = versions.collect(job, 20, fixture_path("proc_driver_version_open.txt"))
    check_types(result)
    f = result.facts
    assert f["torch"] == "2.5.1+cu124" and f["torch_cuda"] == "12.4"
    assert f["nccl"] == "2.21.5" and f["transformer_engine"] == "1.12.0"
    assert f["megatron_core"] == "0.10.0" and f["deepspeed"] == ""
    assert f["driver"] == "565.57.01" and f["driver_too_old"] is False
    job_version = subprocess.run([str(python), "-c", "import platform; "
                                  "print(platform.python_version())"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    assert f["python"] == job_version
    assert result.status == "ok" and "torch 2.5.1+cu124" in result.summary
    assert result.source == f"{python} (--python)"
    assert f"not installed in {python}" in result.evidence["deepspeed"]
    # trainmedic's own interpreter never imported torch to find this out
    assert "torch" not in sys.modules or not hasattr(sys.modules["torch"], "cuda")


def test_the_done_when_case_no_suggestion_from_trainmedics_own_venv(job_venv, monkeypatch):
    """Issue 18: trainmedic in its own venv (this test's interpreter: no torch, no
    flash-attn), the job in another: nothing about the job is read from trainmedic's venv."""
    from trainmedic.trees import load_forest
    from trainmedic.walk import WalkSession

    for name in ("TRAINMEDIC_PYTHON", "TRAINMEDIC_LAUNCH_SCRIPT", "VIRTUAL_ENV",
                 "CONDA_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    own = versions.probe(versions.Budget(20), ProbeContext())
    assert own.status == "unknown" and own.facts == {}
    assert "not the job's environment" in own.summary and "--python" in own.summary
    # in the walk: startup#import-error's flash_attn rule must not fire on that
    forest = load_forest()
    session = WalkSession(forest, "startup#import-error")
    session.attach_probes([own])
    assert session.suggestion()[0] is None
    # the job's own Python, named as the job names it: its facts, its provenance
    python, site = job_venv
    fake_dist(site, "flash-attn", "2.6.3")
    monkeypatch.setenv("TRAINMEDIC_PYTHON", str(python))
    job = versions.probe(versions.Budget(20), ProbeContext())
    assert job.status == "ok" and job.facts["flash_attn"] == "2.6.3"
    assert "TRAINMEDIC_PYTHON" in job.source
    session.attach_probes([job])
    assert session.suggestion()[0] != 0  # flash-attn is installed where the job runs


def test_a_pipx_or_uv_venv_is_never_taken_for_the_job(monkeypatch):
    monkeypatch.setattr(sys, "prefix", "/home/me/.local/pipx/venvs/trainmedic")
    result = versions.collect(JobPython(sys.executable, "trainmedic's own Python", own=True), 5)
    assert result.status == "unknown" and "pipx/uv" in result.summary and result.facts == {}


def test_own_python_with_torch_is_read_and_says_so(tmp_path):
    python = printing(tmp_path / "own", {"python": "3.11.9", "versions": {"torch": "2.6.0"}})
    result = versions.collect(JobPython(str(python), "trainmedic's own Python", own=True), 5)
    assert result.status == "ok" and result.facts["torch"] == "2.6.0"
    assert "trainmedic's own Python" in result.source


def test_garbage_from_the_jobs_python_is_unknown_and_quoted(tmp_path):
    python = fake_python(tmp_path / "bad", "printf 'Segmentation fault\\033]52;c;eA==\\007\\n'")
    result = versions.collect(JobPython(str(python), "--python"), 5)
    assert result.status == "unknown" and result.facts == {}
    assert "\x1b" not in result.summary and "\\x1b]52" in result.summary
    hung = fake_python(tmp_path / "hung", "/bin/sleep 600")
    result = versions.collect(JobPython(str(hung), "--python"), 0.5)
    assert result.status == "unknown" and "timed out" in result.summary
    missing = versions.collect(JobPython(str(tmp_path / "nope" / "python"), "--python"), 5)
    assert missing.status == "unknown" and "not found" in missing.summary


def test_odd_values_from_the_jobs_python_read_as_not_installed(tmp_path):
    python = printing(tmp_path / "odd", {"python": "3.10.12", "versions": {
        "torch": "2.1.0\n\x1b[2J", "deepspeed": ["0.14"], "apex": "0.1"}})
    facts = versions.collect(JobPython(str(python), "--python"), 5).facts
    assert facts["torch"] == "" and facts["deepspeed"] == "" and facts["apex"] == "0.1"


def test_torch_cuda_from_version_py_or_the_local_tag():
    assert versions.torch_cuda_version("2.5.1+cu124", TORCH_VERSION_PY) == "12.4"
    assert versions.torch_cuda_version("2.3.0+cu118") == "11.8"  # no version.py read
    assert versions.torch_cuda_version("2.4.0", "cuda: Optional[str] = None\n") == ""


def test_old_driver_for_the_torch_cuda_fails(tmp_path):
    python = printing(tmp_path / "old", {"python": "3.10.12", "versions": {
        "torch": "2.5.1+cu124"}, "torch_version_py": "cuda = '12.4'\n"})
    result = versions.collect(JobPython(str(python), "--python"), 5,
                              fixture_path("proc_driver_version_classic.txt"))
    assert result.facts["driver"] == "384.98" and result.facts["driver_too_old"] is True
    assert result.status == "fail" and "needs driver >= 525.60" in result.summary


def test_driver_file_formats_and_absence():
    assert versions.driver_version(fixture_path("proc_driver_version_classic.txt")) == "384.98"
    assert versions.driver_version(fixture_path("proc_driver_version_open.txt")) == "565.57.01"
    assert versions.driver_version(Path("/nonexistent/version")) == ""
    assert versions.driver_too_old("13.0", "570.86.15")
    assert not versions.driver_too_old("12.8", "570.86.15")
    assert not versions.driver_too_old("", "570.86.15")


# -- which Python is the job's -------------------------------------------------------------

def test_the_jobs_python_in_order_of_what_was_said(tmp_path, monkeypatch):
    for name in ("TRAINMEDIC_PYTHON", "TRAINMEDIC_LAUNCH_SCRIPT", "VIRTUAL_ENV",
                 "CONDA_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    assert job_python(ProbeContext()).own
    venv = tmp_path / "activated"
    fake_python(venv / "bin", "true")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    found = job_python(ProbeContext())
    assert found.path == str(venv / "bin" / "python") and "VIRTUAL_ENV" in found.source
    monkeypatch.setenv("TRAINMEDIC_PYTHON", "/env/python")
    assert job_python(ProbeContext()).path == "/env/python"
    assert job_python(ProbeContext(python="/given/python")).source == "--python"


def test_the_jobs_python_from_its_launch_script(tmp_path, monkeypatch):
    for name in ("TRAINMEDIC_PYTHON", "VIRTUAL_ENV", "CONDA_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    env = tmp_path / "trainenv"
    python = fake_python(env / "bin", "true")
    torchrun = env / "bin" / "torchrun"  # a console script: its #! line names its Python
    torchrun.write_text(f"#!{python}\nimport sys\n")
    torchrun.chmod(0o755)
    script = tmp_path / "launch.sh"
    script.write_text(f"#!/bin/bash\nsource {env}/bin/activate\n"
                      "torchrun --nproc_per_node 8 train.py --lr 1e-4\n")
    found = job_python(ProbeContext(launch_command=str(script)))
    assert found.path == str(python) and "launch.sh:3" in found.source
    script.write_text(f"#!/bin/bash\n{python} -m torch.distributed.run --nproc_per_node 8 "
                      "train.py\n")
    assert job_python(ProbeContext(launch_command=str(script))).path == str(python)
    script.write_text("srun --container-image=nvcr.io/nvidia/pytorch:24.05-py3 python "
                      "train.py\n")
    monkeypatch.setenv("TRAINMEDIC_LAUNCH_SCRIPT", str(script))
    inside = job_python(ProbeContext())
    assert inside.path == "" and "container image nvcr.io/nvidia/pytorch" in inside.source
    result = versions.collect(inside, 5)
    assert result.status == "unknown" and "container image" in result.summary
    assert versions.tool_venv("/root/.local/share/uv/tools/trainmedic")
    assert not versions.tool_venv("/opt/conda/envs/train")
