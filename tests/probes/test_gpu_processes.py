from trainmedic.probes import gpu_processes
from trainmedic.probes.base import Budget

from .helpers import check_types, fixture_path


def run():
    result = gpu_processes.probe(Budget(5.0))
    check_types(result)
    return result


def test_real_compute_apps_output_is_counted_per_gpu(fakebin, tmp_path):
    (tmp_path / "index.csv").write_text(
        "index, uuid\n0, GPU-d0180485-9584-433c-6782-c335d5df2cb3\n"
        "1, GPU-777ead31-954e-837f-590f-6c4974d8e571\n"
    )
    fakebin(
        "nvidia-smi",
        f'case "$*" in *compute-apps*) /bin/cat "{fixture_path("compute_apps_vgpu.csv")}";; '
        f'*index,uuid*) /bin/cat "{tmp_path / "index.csv"}";; *) exit 7;; esac',
    )
    result = run()
    assert result.status == "warn"
    assert result.facts["count"] == 3 and result.facts["max_per_gpu"] == 2
    assert result.facts["total_memory_mib"] == 0.0  # that query had no used_memory column
    assert "GPU 1: pid ? vgpu" in result.evidence["count"]


def test_processes_with_memory(fakebin):
    fakebin(
        "nvidia-smi",
        "case \"$*\" in *compute-apps*) echo 'pid, process_name, used_memory [MiB], gpu_uuid'; "
        "echo '4242, /usr/bin/python3, 20480, GPU-aa'; echo '4343, python, 1024, GPU-aa';; "
        "*) echo 'index, uuid'; echo '3, GPU-aa';; esac",
    )
    result = run()
    assert result.facts["pids"] == ["4242", "4343"]
    assert result.facts["total_memory_mib"] == 21504.0 and result.facts["max_per_gpu"] == 2
    assert result.evidence["count"].startswith("GPU 3: pid 4242 /usr/bin/python3 holds 20480 MiB")
    assert "21.0 GiB" in result.summary


def test_no_process_is_ok(fakebin):
    fakebin("nvidia-smi", "echo 'pid, process_name, used_memory [MiB], gpu_uuid'")
    result = run()
    assert result.status == "ok" and result.facts["count"] == 0


def test_garbage_missing_and_failure(fakebin):
    result = run()
    assert result.status == "unavailable"
    fakebin("nvidia-smi", "echo '<<<binary junk>>>'")
    assert run().status == "unknown"
    fakebin("nvidia-smi", f'/bin/cat "{fixture_path("smi_no_driver.txt")}"; exit 9')
    assert run().status == "fail"
    fakebin("nvidia-smi", "echo 'Insufficient Permissions' >&2; exit 4")
    failed = run()
    assert failed.status == "fail" and "Insufficient Permissions" in failed.summary
