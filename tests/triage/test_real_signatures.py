"""Each signature on verbatim excerpts of public bug reports (source on each fixture's line 1)."""

from __future__ import annotations

import pytest

from trainmedic.triage import triage_paths

from .conftest import FIXTURES

# fixture -> (top signature, top link)
CASES = {
    # tried 22.78 GiB with 12.73 free + 9.35 cached: it cannot fit, whatever the fragmentation
    "oom_fragmentation.log": ("cuda-oom", "oom#when"),
    "oom_pytorch_21_typo.log": ("cuda-oom", "oom#fragmentation"),
    "oom_pytorch_1x.log": ("cuda-oom", "oom#when"),
    "oom_small_unallocated.log": ("cuda-oom", "oom#when"),
    "watchdog_mismatch.log": ("rank-mismatch", "nccl-hang#collective-mismatch"),
    "watchdog_uniform.log": ("nccl-watchdog-timeout", "nccl-hang#watchdog-timeout"),
    "watchdog_old_format.log": ("nccl-watchdog-timeout", "nccl-hang#watchdog-timeout"),
    "nccl_system_error.log": ("nccl-socket", "multi-node#network-interface"),
    "nccl_socket_internal.log": ("nccl-socket", "multi-node#network-interface"),
    "nccl_ib_completion.log": ("nccl-ib", "nccl-hang#ib-flap"),  # status=12: retries exceeded
    "rendezvous.log": ("rendezvous", "multi-node#rendezvous"),
    "address_in_use.log": ("address-in-use", "multi-node#address-in-use"),
    "address_in_use_libuv.log": ("address-in-use", "multi-node#address-in-use"),
    # Megatron's NaN check alone says neither how the grad norm nor the loss scale behaved
    # before it: the nan-loss question stays
    "nan_grad_norm_megatron.log": ("nan-check", "loss-spike#nan-loss"),
    "nan_grad_norm_nemo.log": ("nan-check", "loss-spike#nan-loss"),
    "megatron_grad_norm_nan.log": ("loss-nan", "loss-spike#nan-loss"),
    "hf_trainer_nan.log": ("loss-nan", "loss-spike#nan-loss"),
    # finite losses, a normal grad norm, then the loss field is gone: a sudden NaN
    "megatron_loss_missing_nan.log": ("loss-nan", "loss-spike#nan-source"),
    "apex_overflow.log": ("loss-scale-collapse", "loss-spike#loss-scale-collapse"),
    # the scale falling 32 -> 2 in five steps is found from the OVERFLOW lines themselves
    "deepspeed_loss_scale_minimum.log": ("loss-scale-collapse", "loss-spike#loss-scale-collapse"),
    "device_assert.log": ("device-assert", "startup#device-assert"),
    "fused_kernels.log": ("apex-extensions", "startup#apex"),  # fused_layer_norm_cuda is APEX
    "fused_kernels_megatron.log": ("fused-kernels", "startup#fused-kernels"),
    "flash_attn.log": ("flash-attn", "startup#flash-attn"),
    "flash_attn_undefined_symbol.log": ("flash-attn", "startup#flash-attn"),
    "divisibility_heads.log": ("divisibility", "startup#divisibility"),
    "divisibility_deepspeed.log": ("divisibility", "startup#divisibility"),
    "batch_size_deepspeed.log": ("batch-size", "startup#batch-size"),
    "xid_fallen_off_bus.log": ("gpu-fallen-off-bus", "hardware#fallen-off-bus"),
    "ecc_uncorrectable.log": ("ecc-uncorrectable", "hardware#ecc"),
}
CLEAN = ["megatron_fp16_warmup.log", "nccl_info_noise.log", "megatron_saved_checkpoint.log"]


def test_every_fixture_names_its_source_on_line_one():
    for path in FIXTURES.rglob("*.log"):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith(("# source: https://", "# assembled:")), path


@pytest.mark.parametrize("name", sorted(CASES))
def test_top_finding(name, use_grep):
    report = triage_paths([str(FIXTURES / name)], use_grep=use_grep)
    sig, link = CASES[name]
    assert report.findings, name
    top = report.findings[0]
    merged = [top.signature] + [a["signature"] for a in top.details.get("also", [])]
    assert top.link == link and sig in merged
    # evidence points at a real line of the file, verbatim (nothing secret in these excerpts)
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    for ev in top.evidence:
        assert ev.line >= 2  # the source line is never evidence
        assert ev.text in lines[ev.line - 1]


@pytest.mark.parametrize("name", CLEAN)
def test_noise_only_excerpts_are_clean(name, use_grep):
    report = triage_paths([str(FIXTURES / name)], use_grep=use_grep)
    assert report.findings == []


def test_oom_numbers_are_parsed():
    report = triage_paths([str(FIXTURES / "oom_fragmentation.log")])
    d = report.findings[0].details
    assert d["tried_mib"] == pytest.approx(22.78 * 1024, abs=0.01)
    assert d["unallocated_mib"] == pytest.approx(9.35 * 1024, abs=0.01)
    assert d["total_mib"] == pytest.approx(31.47 * 1024, abs=0.01)
    old = triage_paths([str(FIXTURES / "oom_pytorch_1x.log")]).findings[0].details
    # <= 2.0 wording: reserved in total minus already allocated
    assert old["unallocated_mib"] == pytest.approx(1.24 * 1024 - 781.59, abs=0.01)


def test_torch_dsa_hint_is_not_a_device_assert():
    report = triage_paths([str(FIXTURES / "ecc_uncorrectable.log")])
    assert [f.signature for f in report.findings] == ["ecc-uncorrectable"]


def test_xid_code_and_fallen_off_bus_merge_into_one_finding():
    report = triage_paths([str(FIXTURES / "xid_fallen_off_bus.log")])
    assert [f.link for f in report.findings] == ["hardware#fallen-off-bus"]
    also = report.findings[0].details["also"]
    assert also[0]["signature"] == "xid" and "79" in also[0]["summary"]


def test_socket_failure_ranks_before_the_nccl_error_it_causes():
    report = triage_paths([str(FIXTURES / "nccl_system_error.log")])
    assert [f.signature for f in report.findings] == ["nccl-socket", "nccl-system-error"]
    assert report.findings[1].kind == "symptom"
    assert "consequence" in report.findings[1].why


def test_oom_before_the_first_step_points_at_first_iteration():
    from trainmedic.triage import triage_text

    # real lines (fixtures megatron_fp16_warmup.log / oom_small_unallocated.log), joined here
    warm = (FIXTURES / "megatron_fp16_warmup.log").read_text(encoding="utf-8").splitlines()
    oom = (FIXTURES / "oom_small_unallocated.log").read_text(encoding="utf-8").splitlines()[3]
    started, iteration = warm[1], warm[2]
    assert triage_text(f"{started}\n{oom}\n").findings[0].link == "oom#first-iteration"
    assert triage_text(f"{started}\n{iteration}\n{oom}\n").findings[0].link == "oom#when"
    assert triage_text(f"{oom}\n").findings[0].link == "oom#when"  # a traceback alone: no guess
