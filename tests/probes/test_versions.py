import sys
from pathlib import Path

import pytest

from trainmedic.probes import versions

from .helpers import check_types, fixture_path


def fake_dist(site: Path, name: str, version: str, files: dict[str, str] | None = None) -> None:
    """A minimal installed distribution that importlib.metadata can find on sys.path."""
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


@pytest.fixture
def site(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_versions_from_metadata_without_importing_torch(site):
    fake_dist(site, "torch", "2.5.1+cu124", {
        # the shape of torch/version.py as torch writes it
        "torch/version.py": "from typing import Optional\n\n__all__ = ['__version__', 'debug', "
        "'cuda', 'git_version', 'hip']\n__version__ = '2.5.1+cu124'\ndebug = False\n"
        "cuda: Optional[str] = '12.4'\ngit_version = 'abc'\nhip: Optional[str] = None\n",
    })
    fake_dist(site, "nvidia-nccl-cu12", "2.21.5")
    fake_dist(site, "transformer_engine", "1.12.0")
    fake_dist(site, "megatron-core", "0.10.0")
    result = versions.collect(fixture_path("proc_driver_version_open.txt"))
    check_types(result)
    f = result.facts
    assert f["torch"] == "2.5.1+cu124" and f["torch_cuda"] == "12.4"
    assert f["nccl"] == "2.21.5" and f["transformer_engine"] == "1.12.0"
    assert f["megatron_core"] == "0.10.0" and f["deepspeed"] == ""
    assert f["driver"] == "565.57.01" and f["driver_too_old"] is False
    assert f["python"] == f"{sys.version_info.major}.{sys.version_info.minor}." \
        f"{sys.version_info.micro}"
    assert result.status == "ok" and "torch 2.5.1+cu124" in result.summary
    assert "torch" not in sys.modules or not hasattr(sys.modules["torch"], "cuda")


def test_torch_cuda_falls_back_to_the_local_version_tag(site):
    fake_dist(site, "torch", "2.3.0+cu118")  # no version.py recorded
    assert versions.collect(Path("/nonexistent")).facts["torch_cuda"] == "11.8"


def test_cpu_only_torch_has_no_cuda(site):
    fake_dist(site, "torch", "2.4.0", {"torch/version.py": "cuda: Optional[str] = None\n"})
    assert versions.collect(Path("/nonexistent")).facts["torch_cuda"] == ""


def test_old_driver_for_the_torch_cuda_fails(site):
    fake_dist(site, "torch", "2.5.1+cu124", {"torch/version.py": "cuda = '12.4'\n"})
    result = versions.collect(fixture_path("proc_driver_version_classic.txt"))
    assert result.facts["driver"] == "384.98" and result.facts["driver_too_old"] is True
    assert result.status == "fail" and "needs driver >= 525.60" in result.summary


def test_driver_file_formats_and_absence():
    assert versions.driver_version(fixture_path("proc_driver_version_classic.txt")) == "384.98"
    assert versions.driver_version(fixture_path("proc_driver_version_open.txt")) == "565.57.01"
    assert versions.driver_version(Path("/nonexistent/version")) == ""
    assert versions.driver_too_old("13.0", "570.86.15")
    assert not versions.driver_too_old("12.8", "570.86.15")
    assert not versions.driver_too_old("", "570.86.15")
