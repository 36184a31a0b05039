import time

from trainmedic.probes import gpu
from trainmedic.probes.base import Budget

from .helpers import cat_script, check_types, fixture_path, fixture_text


def run(budget: float = 5.0):
    result = gpu.probe(Budget(budget))
    check_types(result)
    return result


def smi(fakebin, csv: str, xml: str | None = None) -> None:
    pairs = [("*--query-gpu*", csv)]
    if xml:
        pairs.append(("-q\\ -x", xml))
    fakebin("nvidia-smi", cat_script(*pairs, default="echo no xml >&2; exit 6"))


def no_expected_count(monkeypatch) -> None:
    """No variable tells the probe how many GPUs to expect: it counts what nvidia-smi lists."""
    for name in ("CUDA_VISIBLE_DEVICES", "SLURM_GPUS_ON_NODE", "TRAINMEDIC_EXPECTED_GPUS"):
        monkeypatch.delenv(name, raising=False)


def test_h100_csv_memory_full_ecc_and_thermal_slowdown(fakebin, monkeypatch):
    no_expected_count(monkeypatch)
    smi(fakebin, "query_gpu_h100_synthetic.csv")
    result = run()
    f = result.facts
    assert result.status == "fail"  # uncorrected ECC errors
    assert f["count"] == 8 and f["missing"] == 0 and f["expected"] == 8
    assert f["max_memory_fraction"] == round(81200 / 81559, 4)
    assert f["max_memory_used_mib"] == 81200.0 and f["min_memory_total_mib"] == 81559.0
    assert result.evidence["max_memory_fraction"] == "GPU 3: 79.3 of 79.6 GiB used (99.6%)"
    assert f["ecc_uncorrected"] == 2 and "GPU 5: 2" in result.evidence["ecc_uncorrected"]
    assert f["throttled"] is True and f["throttle_reasons"] == ["HW thermal slowdown"]
    assert "GPU 6" in result.evidence["throttled"]  # 0x4 SW power cap on GPU 3 is not trouble
    assert f["max_temperature_c"] == 88.0
    assert f["driver_version"] == "550.90.07" and f["driver_ok"] is True
    assert f["mig_enabled"] is False and f["remap_pending"] is False
    assert "nvidia-smi -q -x failed" in result.summary  # the fake has no XML: noted, not fatal


def test_tesla_p100_real_csv_and_xml_with_na_fields(fakebin):
    smi(fakebin, "query_gpu_tesla_p100.csv", "smi_q_x_tesla_p100.xml")
    result = run()
    f = result.facts
    assert result.status == "ok", result.summary
    assert f["count"] == 1 and f["models"] == ["Tesla P100-PCIE-16GB"]
    assert f["min_memory_total_mib"] == 103 + 0 + 16280  # total from reserved+used+free
    assert f["max_memory_fraction"] == 0.0 and f["max_temperature_c"] == 37.0
    assert f["ecc_uncorrected"] == 0 and f["remap_pending"] is False
    assert f["driver_version"] == "510.47.03"  # CSV had no driver column: taken from XML


def test_a100_mig_xml_turns_mig_on(fakebin):
    smi(fakebin, "query_gpu_tesla_p100.csv", "smi_q_x_a100_mig.xml")
    health, driver = gpu.parse_xml(fixture_text("smi_q_x_a100_mig.xml"))
    assert driver == "535.54.03" and len(health) == 1 and health[0].mig is True
    assert health[0].bus_id == "00000000:01:00.0"
    assert health[0].remap_pending is False and health[0].reset_required is False
    result = run()
    assert result.facts["mig_enabled"] is True
    assert "MIG on" in result.evidence["mig_enabled"]


def test_pending_row_remap_and_reset_required_fail_the_gpu(fakebin, tmp_path):
    text = fixture_text("smi_q_x_a100_mig.xml").replace(
        "<remapped_rows>N/A</remapped_rows>",
        "<remapped_rows><remapped_row_corr>0</remapped_row_corr><remapped_row_unc>1"
        "</remapped_row_unc><remapped_row_pending>Yes</remapped_row_pending>"
        "<remapped_row_failure>No</remapped_row_failure></remapped_rows>",
    ).replace("<reset_required>No</reset_required>", "<reset_required>Yes</reset_required>")
    (tmp_path / "pending.xml").write_text(text)
    health, _ = gpu.parse_xml(text)
    assert health[0].remap_pending and health[0].reset_required
    fakebin(
        "nvidia-smi",
        f'case "$*" in *--query-gpu*) /bin/cat "{fixture_path("query_gpu_tesla_p100.csv")}";; '
        f'*) /bin/cat "{tmp_path / "pending.xml"}";; esac',
    )
    result = run()
    assert result.status == "fail"
    assert result.facts["remap_pending"] is True and result.facts["reset_required"] is True
    assert "row remapping pending" in result.evidence["remap_pending"]


def test_wedged_gpu_device_handle_error(fakebin):
    fakebin("nvidia-smi",
            f'/bin/cat "{fixture_path("smi_device_handle_unknown_error.txt")}" >&2; exit 255')
    result = run()
    assert result.status == "fail"
    assert result.facts["wedged"] == 1 and result.facts["reset_required"] is True
    assert result.facts["missing"] == 1
    assert "0000:17:00.0" in result.evidence["reset_required"]


def test_wedged_gpu_spaced_variant_among_good_rows(fakebin, tmp_path):
    rows = fixture_text("query_gpu_tesla_p100.csv")
    error = fixture_text("smi_device_handle_spaced.txt")
    (tmp_path / "mixed.txt").write_text(rows + error)
    fakebin("nvidia-smi", f'/bin/cat "{tmp_path / "mixed.txt"}"; exit 15')
    result = run()
    assert result.facts["count"] == 1 and result.facts["wedged"] == 1
    assert result.status == "fail" and "not answering" in result.summary


def test_no_driver_message_fails_with_driver_not_ok(fakebin):
    fakebin("nvidia-smi", f'/bin/cat "{fixture_path("smi_no_driver.txt")}"; exit 9')
    result = run()
    assert result.status == "fail" and result.facts["driver_ok"] is False
    assert "cannot talk to the NVIDIA driver" in result.summary


def test_nvml_library_mismatch(fakebin):
    fakebin("nvidia-smi", f'/bin/cat "{fixture_path("smi_nvml_mismatch.txt")}"; exit 18')
    result = run()
    assert result.status == "fail" and "Driver/library version mismatch" in result.summary


def test_invalid_throttle_field_is_retried_with_the_newer_name(fakebin, tmp_path):
    calls = tmp_path / "calls"
    fakebin(
        "nvidia-smi",
        f'echo "$*" >> "{calls}"\n'
        'case "$*" in *clocks_throttle_reasons*) '
        'echo \'Field "clocks_throttle_reasons.active" is not a valid field to query.\'; '
        "exit 2;; esac\n"
        + cat_script(("*--query-gpu*", "query_gpu_tesla_p100.csv"), default="exit 6"),
    )
    result = run()
    assert result.facts["count"] == 1
    assert "clocks_event_reasons.active" in calls.read_text().splitlines()[1]


def test_missing_nvidia_smi_is_unavailable(fakebin):
    result = run()
    assert result.status == "unavailable" and "not found" in result.summary
    assert result.facts == {}


def test_garbage_output_is_unknown_and_shown_quoted(fakebin):
    fakebin("nvidia-smi", "echo 'Segmentation fault (core dumped)'; echo '@@@ ### !!!'")
    result = run()
    assert result.status == "unknown" and "'Segmentation fault (core dumped)'" in result.summary
    assert result.facts == {}  # nothing for a rule to read
    fakebin("nvidia-smi", "/usr/bin/printf '\\377\\033[2Jgarbage ,,,\\n'")
    summary = run().summary
    assert "\x1b" not in summary and "\ufffd" not in summary  # escapes, not bytes
    assert "\\x1b[2Jgarbage" in summary


def test_hanging_nvidia_smi_comes_back_within_its_timeout(fakebin):
    fakebin("nvidia-smi", "/bin/sleep 600")
    start = time.monotonic()
    result = run(budget=1.0)
    assert time.monotonic() - start < 2.0
    # a hung nvidia-smi is a node fault (often a GPU that fell off the bus), not "n/a"
    assert result.status == "fail" and "hung" in result.summary and "Xid 79" in result.summary


def test_cuda_visible_devices_names_gpus_that_are_not_there(fakebin, monkeypatch):
    smi(fakebin, "query_gpu_h100_synthetic.csv")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,8,9")
    result = run()
    assert result.facts["expected"] == 4 and result.facts["missing"] == 2
    assert "absent: 8,9" in result.evidence["missing"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("SLURM_GPUS_ON_NODE", "8")
    assert run().facts["missing"] == 0
    monkeypatch.setenv("TRAINMEDIC_EXPECTED_GPUS", "10")
    assert run().facts["missing"] == 2


def test_parse_xml_rejects_garbage():
    import pytest

    for text in ["", "<html>oops</html>", "<nvidia_smi_log><gpu></nvidia_smi_log>"]:
        with pytest.raises(ValueError):
            gpu.parse_xml(text)


def test_real_h200_query_with_the_probe_field_set(fakebin, monkeypatch):
    # recorded on an H200 with the probe's own --query-gpu argv (scripts/device_fixtures.sh)
    no_expected_count(monkeypatch)
    smi(fakebin, "query_gpu_h200.csv")
    result = run()
    f = result.facts
    assert f["count"] == 1 and f["models"] == ["NVIDIA H200"]
    assert f["min_memory_total_mib"] == 143771.0 and f["max_memory_fraction"] == 0.0
    assert f["driver_version"] == "580.159.04" and f["driver_ok"] is True
    assert f["ecc_uncorrected"] == 0 and f["max_temperature_c"] == 37.0
    assert result.status == "ok" and result.evidence["throttled"].startswith("no ")  # 0x1: idle
