"""General rules from the tune-6 round on the infrastructure trees (multi-node, nccl-hang,
containers, scheduler, hardware, slow-training, preflight, moe): DCGM's clock-throttling health
messages, NCCL's NVLS set-up failing on the fabric's state, a failed verbs call before the
socket teardown it causes, the kernel's memory-cgroup kill of a DataLoader worker, a watchdog
line cut short by the terminal, a socket family the namespace lacks, and nvidia-smi's pending
row remap.

Each rule is checked on a real tune case (tests/corpus, source URL on its first line) and on a
real line it must leave alone.
"""

from __future__ import annotations

from .routed import links, top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)

# -- hardware --------------------------------------------------------------------------------


def test_dcgm_thermal_violation_is_throttling():
    text = excerpt("hardware/dcgm_thermal_violation_clocks_event_gpu2_dcgm_270.log")
    assert top(text) == "hardware#throttling"
    # nvidia-smi -q's clocks-event list with nothing active is no finding
    # (a real nvidia-smi -q dump published on GitHub)
    assert links("        SW Thermal Slowdown               : Not Active") == []


# -- containers and nccl-hang ----------------------------------------------------------------


def test_nvls_cuda_invalid_argument_is_the_fabric_manager():
    text = excerpt("containers/nvls_cuda_failure_invalid_argument_after_fabricmanager_restart_"
                   "h100_nccl_976.log")
    assert top(text) == "containers#fabric-manager"
    # another CUDA failure NCCL reports stays the NCCL error node
    line = ("2025-04-04T16:57:57.7153695Z [2025-04-04 16:57:39] ip-10-0-9-191:95209:95228 [0] "
            "init.cc:416 NCCL WARN Cuda failure 'operation not supported'")
    assert top(line) == "nccl-hang#nccl-error"


def test_socket_family_not_supported_is_the_container_tree():
    text = excerpt("containers/socket_creation_failed_address_family_docker_nccl_tests_14.log")
    assert top(text) == "containers#symptom"
    # the libibverbs warning printed above it is no container finding by itself
    line = "e66aa18dc444:3171:3171 [0] misc/ibvwrap.cu:61 WARN Failed to open libibverbs.so[.1]"
    assert "containers#symptom" not in links(line)


# -- multi-node ------------------------------------------------------------------------------


def test_failed_verbs_call_ranks_above_the_socket_teardown():
    text = excerpt("multi-node/ibv_modify_qp_network_unreachable_dgx_h100_nccl_tests_185.log")
    assert top(text) == "multi-node#infiniband"
    # a connect that fails on the socket network alone stays the interface node
    line = ("ubuntu:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to "
            "10.0.0.2<45763> failed : Software caused connection abort")
    assert top(line) == "multi-node#network-interface"


# -- scheduler -------------------------------------------------------------------------------


def test_memcg_kill_of_a_dataloader_worker_is_the_worker_node():
    text = excerpt("data-pipeline/worker_killed_memory_cgroup_oom_dmesg_colab_opennmt_"
                   "tutorial_6.log")
    assert top(text) == "data-pipeline#worker-oom-killed"
    # the kernel's line with no loader worker near it stays the cgroup kill
    line = ("Dec  9 21:47:11 jz-desktop-08 kernel: [3217913.649049] Memory cgroup out of memory: "
            "Killed process 11433 (java) total-vm:25004420kB, anon-rss:91796kB, file-rss:15612kB, "
            "shmem-rss:0kB, UID:0 pgtables:716kB oom_score_adj:0")
    assert top(line) == "scheduler#cgroup-oom-kill"


# -- nccl-hang: rank comparison --------------------------------------------------------------


def test_watchdog_line_cut_by_the_terminal_is_no_collective_mismatch():
    text = excerpt("nccl-hang/allgather_base_timeout_wrapped_tmux_ms_swift_5409.log")
    assert top(text) == "nccl-hang#watchdog-timeout"
    assert "nccl-hang#collective-mismatch" not in links(text)
    # whole lines of two ranks at one sequence number with different sizes still disagree
    other = excerpt("moe/qwen3_moe_zero3_stuck_first_step_allgather_timeout_ds_7461.log")
    assert "nccl-hang#collective-mismatch" in links(other)


# -- preflight -------------------------------------------------------------------------------


def test_nvidia_smi_pending_row_remap_fails_the_gpu_health_check():
    text = excerpt("preflight/nvidia_smi_q_remapped_rows_pending_yes_gpud_80.log")
    assert top(text) == "preflight#gpu-health"
    # the same fields of a healthy GPU (a real nvidia-smi -q dump published on GitHub)
    block = ("    Remapped Rows\n"
             "        Correctable Error                 : 0\n"
             "        Uncorrectable Error               : 0\n"
             "        Pending                           : No\n"
             "        Remapping Failure Occurred        : No\n")
    assert links(block) == []


# -- scheduler: what a hang after the end of training looks like (--symptom hang) ------------


def test_reported_hang_after_megatron_or_estimator_end_is_the_exit_hang():
    for name in ("scheduler/no_exit_after_last_iteration_nemotron_gb200_megatron_bridge_3427.log",
                 "scheduler/processes_never_exit_after_final_step_opennmt_tf_206.log"):
        text = excerpt(name)
        assert top(text, symptom="hang") == "scheduler#exit-hang"
        # the log alone cannot tell a finished run that hangs from one that exited
        assert top(text) is None
    # a log that stops mid-training is not an exit hang
    mid = ("INFO:tensorflow:loss = 0.0007880032, step = 6842 (393.713 sec)\n"
           "INFO:tensorflow:loss = 0.00072970986, step = 6946 (396.764 sec)\n")
    assert top(mid, symptom="hang") != "scheduler#exit-hang"
