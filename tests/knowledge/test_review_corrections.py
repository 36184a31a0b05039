"""The corrections of the knowledge review (shared/research/knowledge-review.md), held in place.

Each test names the review item it guards (A = wrong, B = outdated, C = imprecise, D = dangerous,
S = the question-quality points of section 2) and fails if the mistake comes back anywhere in the
built-in trees, not only in the node the review quoted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trainmedic.trees import Fix, Question, load_forest
from trainmedic.trees.danger import step_problems

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def forest():
    return load_forest()


def _fixes(forest):
    for tree in forest.trees.values():
        for fix in tree.fixes():
            yield tree.id, fix


def _steps(forest):
    for tree_id, fix in _fixes(forest):
        for step in fix.steps:
            yield f"{tree_id}#{fix.id}", fix, step


def _code(step) -> str:
    return step.code or ""


def _fix_text(fix: Fix) -> str:
    parts = [str(fix.fix), str(fix.why), str(fix.verify or "")]
    parts += [str(s.do) for s in fix.steps] + [s.code or "" for s in fix.steps]
    return "\n".join(parts)


def _node(forest, ref: str):
    tree_id, node_id = ref.split("#")
    return forest.trees[tree_id].nodes[node_id]


# --- 1(a) wrong -------------------------------------------------------------------------------

def test_a1_skip_train_iteration_range_only_where_labelled_megatron_deepspeed(forest):
    """A1: Megatron-DeepSpeed's flag is never offered as NVIDIA Megatron-LM's."""
    seen = []
    for where, _fix, step in _steps(forest):
        if "--skip-train-iteration-range" in _code(step):
            seen.append(where)
            assert "Megatron-DeepSpeed" in str(step.do), where
            assert re.search(r"--skip-train-iteration-range \d+-\d+", _code(step)), where
    assert seen, "the Megatron-DeepSpeed form should still be shown next to Megatron-LM's"


def test_a1_megatron_lm_skips_single_iterations_not_ranges(forest):
    offered = []
    for where, _fix, step in _steps(forest):
        code = _code(step)
        if "--iterations-to-skip" in code:
            offered.append(where)
            assert not re.search(r"--iterations-to-skip\s+\d+[-:]\d+", code), where
            assert "0.12" in str(step.do), f"{where}: say which Megatron-LM core has it"
        # a colon range parses in neither framework
        assert not re.search(r"--(skip-train-iteration-range|iterations-to-skip)\s+\d+:\d+",
                             code), where
    assert {"loss-spike#dirty-data", "loss-spike#spike-recovery"} <= set(offered)


def test_a1_no_reference_or_readme_credits_megatron_lm_with_the_range_flag(forest):
    for _tree_id, fix in _fixes(forest):
        for ref in fix.refs:
            if "skip-train-iteration-range" in str(ref.title):
                assert "Megatron-DeepSpeed" in str(ref.title), ref.title
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for paragraph in readme.split("\n\n"):
        if "--skip-train-iteration-range" in paragraph:
            assert "Megatron-DeepSpeed" in paragraph, paragraph


def test_a2_no_megatron_command_passes_the_default_on_nan_check(forest):
    """A2: only --no-check-for-nan-in-loss-and-grad exists (since core 0.5)."""
    for where, _fix, step in _steps(forest):
        assert not re.search(r"(?<!no-)check-for-nan-in-loss-and-grad", _code(step)), where


def test_a3_nvte_attention_variables_only_for_non_megatron_or_old_megatron(forest):
    """A3: NVTE_*_ATTN assignments stop Megatron-LM core 0.11+ at model build."""
    for where, _fix, step in _steps(forest):
        if re.search(r"\bNVTE_(FUSED|FLASH|UNFUSED)_ATTN=", _code(step)):
            assert re.search(r"without Megatron|0\.10", str(step.do)), where
    te_cache = _node(forest, "oom#te-cache")
    codes = " ".join(_code(s) for s in te_cache.steps)
    assert "--attention-backend" in codes and "unset NVTE_FLASH_ATTN NVTE_FUSED_ATTN" in codes


def _stage0_activation_mib(layers_per_virtual_stage: str) -> float:
    import contextlib
    import io

    from trainmedic.cli import main

    out = io.StringIO()
    argv = ["memory", "--num-layers", "64", "--hidden-size", "4096", "--num-attention-heads",
            "32", "--seq-length", "4096", "--max-position-embeddings", "4096",
            "--micro-batch-size", "1", "--global-batch-size", "64",
            "--pipeline-model-parallel-size", "4", "--bf16",
            "--num-layers-per-virtual-pipeline-stage", layers_per_virtual_stage,
            "--json", "--no-probe"]
    with contextlib.redirect_stdout(out):
        assert main(argv) in (0, 1)  # 1: it does not fit; the activations are compared
    return float(json.loads(out.getvalue())["activation_mib"])


def test_a4_the_vpp_fix_moves_memory_in_the_direction_it_promises(forest, monkeypatch):
    """A4: the interleaving penalty falls as virtual stages per rank grow."""
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    vpp = _node(forest, "oom#vpp")
    advised = []
    for step in vpp.steps:
        code = re.sub(r"#.*", "", _code(step))
        advised += re.findall(r"--num-layers-per-virtual-pipeline-stage\s+(\d+)", code)
    assert advised, "the fix should show the layers-per-virtual-stage value it advises"
    for value in set(advised):
        fewer_chunks = str(int(value) * 2)  # the old advice: more layers in each virtual stage
        assert _stage0_activation_mib(value) < _stage0_activation_mib(fewer_chunks)
    assert "--microbatch-group-size-per-virtual-pipeline-stage" not in " ".join(
        re.sub(r"#.*", "", _code(s)) for s in vpp.steps)


def test_a5_bf16_first_last_layers_never_with_the_delayed_recipe(forest):
    """A5: --first-last-layers-bf16 needs a current-scaling --fp8-recipe."""
    seen = False
    for where, _fix, step in _steps(forest):
        code = _code(step)
        if "--first-last-layers-bf16" in code:
            seen = True
            recipe = re.search(r"--fp8-recipe\s+(\S+)", code)
            assert recipe and recipe.group(1) in ("tensorwise", "mxfp8", "blockwise"), where
    assert seen


def test_a6_cpu_offload_always_with_the_precision_aware_optimizer(forest):
    """A6: Megatron-LM asserts without --use-precision-aware-optimizer."""
    seen = 0
    for where, _fix, step in _steps(forest):
        if "--optimizer-cpu-offload" in _code(step):
            seen += 1
            assert "--use-precision-aware-optimizer" in _code(step), where
    assert seen >= 2


LEVEL2_TIMERS = ("forward-compute", "backward-compute", "batch-generator", "forward-recv",
                 "backward-send", "forward-send-backward-recv")


def test_a7_level_two_timers_are_never_promised_at_level_one(forest):
    """A7: per-micro-batch timers are registered with log_level=2."""
    for where, fix, step in _steps(forest):
        if re.search(r"--timing-log-level\s+1\b", _code(step)):
            assert not any(t in _fix_text(fix) for t in LEVEL2_TIMERS), where
    measure = _node(forest, "slow-training#measure-timers")
    assert re.search(r"--timing-log-level\s+2\b", " ".join(_code(s) for s in measure.steps))
    timer = _node(forest, "slow-training#timer")
    assert "level 2" in str(timer.help)


# --- 1(b) outdated ----------------------------------------------------------------------------

def test_b1_no_torch_wheel_index_that_stopped_at_an_old_release(forest):
    for where, _fix, step in _steps(forest):
        assert not re.search(r"download\.pytorch\.org/whl/cu12[14]\b", _code(step)), where


def test_b2_no_removed_huggingface_cli(forest):
    for where, _fix, step in _steps(forest):
        assert not re.search(r"^\s*huggingface-cli\b", _code(step), re.M), where


def test_b3_gdr_is_judged_by_ncclss_verdict_not_by_nvidia_peermem(forest):
    gdr = _node(forest, "multi-node#gdr-disabled")
    assert "DMA-BUF" in str(gdr.why) and "2.13" in str(gdr.why)
    assert "GPU Direct RDMA" in _code(gdr.steps[0])


def test_b4_fp8_offers_current_scaling(forest):
    fp8 = _node(forest, "loss-spike#fp8-spike")
    assert "--fp8-recipe tensorwise" in " ".join(_code(s) for s in fp8.steps)


def test_b5_selective_recompute_names_its_modules_where_it_is_advised_for_memory(forest):
    for ref in ("oom#reduce-activations", "slow-training#compute-bound"):
        codes = " ".join(_code(s) for s in _node(forest, ref).steps)
        assert "--recompute-modules" in codes, ref


def test_b6_blackwell_architectures_are_listed(forest):
    for ref in ("startup#apex", "startup#arch-list"):
        assert re.search(r"10\.0|sm_100", _fix_text(_node(forest, ref))), ref


def test_b7_shared_memory_covers_cumem_host_and_removeipc(forest):
    """The /dev/shm fix (one node since nccl-hang's copy was merged into it) names the two other
    shared-memory failures, and its tree's fixes for them carry the remedies."""
    home = _fix_text(_node(forest, "containers#dev-shm-size"))
    for needle in ("SYS_NICE", "RemoveIPC", "2.24", "cumem-sys-nice", "remove-ipc"):
        assert needle in home, needle
    assert "NCCL_CUMEM_HOST_ENABLE=0" in _fix_text(_node(forest, "containers#cumem-sys-nice"))
    assert "RemoveIPC=no" in _fix_text(_node(forest, "containers#remove-ipc"))
    error = _node(forest, "nccl-hang#nccl-error")
    assert any(a.goto == "containers#dev-shm-size" and "/dev/shm" in str(a.text)
               for a in error.answers)


def test_b8_no_pinned_ngc_release_tag(forest):
    for where, _fix, step in _steps(forest):
        assert not re.search(r"nvidia/pytorch:\d{2}\.\d{2}", _code(step)), where


# --- 1(c) imprecise ---------------------------------------------------------------------------

def test_c1_backward_oom_is_not_blamed_on_unsharded_megatron_gradients(forest):
    fix = _node(forest, "oom#backward-grads")
    assert "logits" in str(fix.why) and "distributed optimizer" in str(fix.myth)


def test_c3_collective_level_logging_is_never_the_standing_advice(forest):
    for where, _fix, step in _steps(forest):
        for value in re.findall(r"NCCL_DEBUG_SUBSYS=([\w,^]+)", _code(step)):
            assert "COLL" not in value.split(","), where


def test_c4_bootstrap_line_is_looked_for_with_its_subsystem(forest):
    verify = str(_node(forest, "multi-node#network-interface").verify)
    assert "BOOTSTRAP" in verify and "Bootstrap: Using" in verify


def test_c5_max_connections_is_not_a_hang_cause(forest):
    fix = _node(forest, "nccl-hang#max-connections")
    assert "launch" in str(fix.myth) and "0.12" in str(fix.why)
    silent = _node(forest, "nccl-hang#silent-hang")
    assert silent.answers[-1].goto == "max-connections"  # last, not a likely cause


def test_c6_startup_answer_accepts_both_message_forms(forest):
    texts = [str(a.text) for a in _node(forest, "startup#error").answers]
    assert any("require setting" in t and "requires setting" in t for t in texts)


def test_c7_torchfrtrace_analyses_instead_of_printing_raw_entries(forest):
    for where, _fix, step in _steps(forest):
        assert not re.search(r"torchfrtrace\b[^\n]*\s(-j|--just_print_entries)\b",
                             _code(step)), where


def test_c8_ncclras_comes_with_its_text_protocol_fallback(forest):
    for where, _fix, step in _steps(forest):
        if re.search(r"^\s*ncclras\b", _code(step), re.M):
            assert "nc localhost 28028" in _code(step), where


def test_c9_uneven_batches_not_drop_last(forest):
    fix = _node(forest, "nccl-hang#sampler-exhausted")
    assert "pads" in str(fix.why) and "Join" in " ".join(_code(s) for s in fix.steps)


def test_c10_multi_rank_nccl_tests_under_srun_use_mpi(forest):
    for where, _fix, step in _steps(forest):
        for line in _code(step).splitlines():
            if re.search(r"\bsrun\b.*all_reduce_perf.*-g 1\b", line):
                assert "--mpi=" in line, where


def test_c11_nccl_ib_hca_names_are_exact(forest):
    for where, _fix, step in _steps(forest):
        for value in re.findall(r"NCCL_IB_HCA=\"?([^\s\"]+)", _code(step)):
            assert value.startswith(("=", "^=")), where


def test_c12_gdr_level_is_measured_not_exported(forest):
    for where, _fix, step in _steps(forest):
        assert not re.search(r"export NCCL_NET_GDR_LEVEL", _code(step)), where


def test_c13_one_torchrun_per_node_under_srun(forest):
    for where, _fix, step in _steps(forest):
        for line in _code(step).splitlines():
            if re.search(r"\bsrun\b", line) and "torchrun" in line:
                assert "--ntasks-per-node=1" in line, where


def test_c14_rsync_never_globs_host_names(forest):
    for where, _fix, step in _steps(forest):
        assert not re.search(r"rsync\b[^\n]*\s[\w.-]*\*[\w.-]*:", _code(step)), where


def test_c15_stragglers_are_not_found_by_utilisation(forest):
    assert "never waits" not in str(_node(forest, "slow-training#straggler-detect").why)


def test_c16_no_fixed_grad_norm_band_outside_myths(forest):
    for _tree_id, fix in _fixes(forest):
        text = _fix_text(fix)
        assert not re.search(r"0\.1\s*-\s*10\b", text), fix.id


def test_c17_driver_rule_is_minor_version_compatibility(forest):
    assert "minor-version" in str(_node(forest, "startup#driver-too-old").why)


def test_c18_xid_8_restarts_the_application_first(forest):
    fix = _node(forest, "hardware#gpu-reset")
    assert "Xid 8" in str(fix.why) and "restart the application" in str(fix.why)


def test_c19_no_unsourced_failure_shares(forest):
    assert "most failures are communication" not in str(forest.trees["triage"].summary)


def test_c20_ipc_host_and_shm_size_are_not_combined(forest):
    for where, _fix, step in _steps(forest):
        for line in _code(step).splitlines():
            line = re.sub(r"#.*", "", line)
            assert not ("--ipc=host" in line and "--shm-size" in line), where


def test_c21_foreign_process_answer_names_a_pid_that_is_not_yours(forest):
    texts = [str(a.text) for a in _node(forest, "oom#message").answers
             if a.goto == "other-process"]
    assert texts and "not one of your ranks" in texts[0]


def test_c22_dcp_saves_the_optimizer_too(forest):
    for where, _fix, step in _steps(forest):
        if "dcp.save(" in _code(step):
            assert "optim" in _code(step), where


def test_c23_weights_only_default_is_explained_where_torch_load_is_advised(forest):
    for ref in ("oom#model-init", "oom#resume-load"):
        assert "2.6" in _fix_text(_node(forest, ref)), ref


def test_c24_rampup_only_with_sample_based_training(forest):
    for where, fix, step in _steps(forest):
        if "--rampup-batch-size" in _code(step):
            assert "--train-samples" in _fix_text(fix), where


def test_c25_rerun_state_machine_exit_codes_are_explained(forest):
    text = _fix_text(_node(forest, "loss-spike#nan-source"))
    assert "exit code 16" in text.lower() and "exit code 17" in text.lower()


def test_c26_rope_scaling_flags_are_offered(forest):
    codes = " ".join(_code(s) for s in _node(forest, "convergence#position-embedding").steps)
    for flag in ("--use-rope-scaling", "--normalization RMSNorm", "--swiglu",
                 "--untie-embeddings-and-output-weights"):
        assert flag in codes, flag


def test_c27_adam_restart_is_not_called_uncorrected(forest):
    assert "uncorrected" not in str(_node(forest, "convergence#resume-jump").why)


# --- 1(d) dangerous ---------------------------------------------------------------------------

def test_d_every_dangerous_or_privileged_command_is_marked(forest):
    problems = []
    for tree in forest.trees.values():
        for fix in tree.fixes():
            for step in fix.steps:
                problems += [str(p) for p in step_problems(step, tree.file)]
    assert problems == []


def test_d1_reboot_and_the_diagnostic_after_it_are_separate_steps(forest):
    for where, _fix, step in _steps(forest):
        code = _code(step)
        assert not (re.search(r"\breboot\b", code) and "dcgmi diag" in code), where


def test_d11_node_actions_come_with_a_user_path(forest):
    """Issue 21 item 4: where an operator drains, resets or reboots, a user can --exclude."""
    node_kinds = {"gpu-reset", "reboot", "kernel-module", "power-limit"}
    for tree_id, fix in _fixes(forest):
        if any(s.danger and (s.danger.kind in node_kinds or "state=drain" in _code(s))
               for s in fix.steps):
            assert any("--exclude=" in _code(s) and not s.needs for s in fix.steps), \
                f"{tree_id}#{fix.id}"


def test_d2_gpu_resets_name_the_nvswitch_caveat_and_take_a_placeholder(forest):
    for where, _fix, step in _steps(forest):
        if step.danger and step.danger.kind == "gpu-reset":
            assert "<GPU_INDEX>" in _code(step), where
            assert "drained-node" in step.needs and "idle-gpus" in step.needs, where


# --- section 2: question quality --------------------------------------------------------------

def test_s1_no_dead_end_after_an_illegal_memory_access(forest):
    xid = _node(forest, "hardware#xid")
    assert any("cannot read the kernel log" in str(a.text) for a in xid.answers)
    assert any("No Xid" in str(a.text) for a in xid.answers)
    died = _node(forest, "triage#died")
    illegal = [a for a in died.answers if "illegal memory access" in str(a.text)]
    assert illegal and all(a.goto == "startup#device-assert" for a in illegal)
    signature = next(s for s in forest.signatures() if s.id == "illegal-memory-access")
    assert signature.link == illegal[0].goto


def test_s2_kernel_log_access_is_not_assumed(forest):
    assert "dmesg_restrict" in str(_node(forest, "hardware#symptom").help)
    fix = _node(forest, "hardware#no-kernel-log")
    assert "journalctl -k" in " ".join(_code(s) for s in fix.steps)


def test_s4_shell_probes_do_not_speak_for_the_job(forest):
    for tree in forest.trees.values():
        for question in tree.questions():
            for answer in question.answers:
                if any(rule.probe == "env" for rule in answer.when):
                    because = str(answer.because).lower()
                    assert "this shell" in because, f"{tree.id}#{question.id}"


def test_s5_a_full_gpu_does_not_suggest_an_oom(forest):
    for tree in forest.trees.values():
        for question in tree.questions():
            for answer in question.answers:
                facts = {rule.fact for rule in answer.when}
                assert "gpu.max_memory_fraction" not in facts, f"{tree.id}#{question.id}"


def test_s6_bf16_causes_before_fp16_and_the_missing_spike_answers(forest):
    spike_when = _node(forest, "loss-spike#spike-when")
    assert "fp16" not in str(spike_when.answers[0].text)
    assert "resume-spike" in [a.goto for a in spike_when.answers]
    assert "replica-divergence" in [a.goto for a in _node(forest, "loss-spike#symptom").answers]
    resume = _node(forest, "loss-spike#resume-spike")
    assert "StatefulDataLoader" in _fix_text(resume) and "ignore_data_skip" in _fix_text(resume)
    sdc = _node(forest, "loss-spike#replica-divergence")
    assert "--check-weight-hash-across-dp-replicas-interval" in _fix_text(sdc)
    assert "--exclude=" in _fix_text(sdc)


def test_s7_scheduler_ends_do_not_fall_into_something_else(forest):
    # triage#died -> died-other names the scheduler's verdicts and leads into the scheduler tree
    assert "triage#died-other" in {
        str(forest.resolve("triage", a.goto)) for a in _node(forest, "triage#died").answers}
    other = _node(forest, "triage#died-other")
    assert isinstance(other, Question)
    to_scheduler = [a for a in other.answers
                    if str(forest.resolve("triage", a.goto)).startswith("scheduler")]
    assert len(to_scheduler) == 1
    for needle in ("TIME LIMIT", "PREEMPTION", "NODE FAILURE", "OUT_OF_MEMORY"):
        assert needle in str(to_scheduler[0].text), needle
    time_limit = _node(forest, "scheduler#time-limit")
    assert "--exit-signal-handler" in _fix_text(time_limit)


# --- seeds that were wrong stay as myths with the correction ------------------------------------

SEED_MYTHS = [
    ("loss-spike#spike-recovery", "--skip-train-iteration-range"),
    ("loss-spike#grad-norm-explosion", "--check-for-nan-in-loss-and-grad"),
    ("oom#te-cache", "NVTE_FUSED_ATTN=0"),
    ("oom#vpp", "virtual pipeline"),
    ("oom#backward-grads", "--overlap-grad-reduce"),
    ("nccl-hang#max-connections", "CUDA_DEVICE_MAX_CONNECTIONS"),
    ("slow-training#monitor", "0.1-10"),
    ("triage#collect-evidence", "80%"),
]


@pytest.mark.parametrize(("ref", "seed_text"), SEED_MYTHS, ids=[m[0] for m in SEED_MYTHS])
def test_wrong_seed_advice_is_kept_as_a_myth(forest, ref, seed_text):
    fix = _node(forest, ref)
    assert isinstance(fix, Fix) and seed_text in str(fix.myth)
