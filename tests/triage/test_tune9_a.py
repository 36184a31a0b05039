"""General rules from the tune-9 round on the infrastructure trees (startup, containers,
multi-node, nccl-hang): NCCL's plugin probe notice that is no missing library, Megatron's
dataset helpers imported from a vendored copy, a rank killed by SIGBUS, the EFA provider's
ENOMEM, an HCA's fatal async event, and a refused NCCL socket connection.

Each rule is checked on a real tune case (tests/corpus, source URL on its first line) and on a
real line it must leave alone.
"""

from __future__ import annotations

from .routed import links, top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)

# -- startup ---------------------------------------------------------------------------------


def test_nccl_plugin_probe_notice_is_no_missing_library():
    text = excerpt("nccl-hang/first_broadcast_timeout_litgpt_1832.log")
    assert "startup#missing-shared-library" not in links(text)
    assert top(text) == "nccl-hang#first-collective"
    # NCCL's INFO notice alone is nothing to report
    line = ("babel-0-31:2324239:2324239 [3] NCCL INFO NET/Plugin: Plugin load returned 2 : "
            "libnccl-net.so: cannot open shared object file: No such file or directory : when "
            "loading libnccl-net.so")
    assert "startup#missing-shared-library" not in links(line)
    # a missing libnccl itself still is (the signature's own kind of line)
    assert top("ImportError: libnccl.so.2: cannot open shared object file: No such file or "
               "directory") == "startup#missing-shared-library"


def test_megatron_helpers_from_a_vendored_copy_is_fused_kernels():
    text = excerpt("startup/dataset_helpers_import_megatron_gpt_pretraining_nemo_6158.log")
    assert top(text) == "startup#fused-kernels"
    # another package's missing name stays the import question (signature's counterexample)
    line = ("ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler' "
            "(/opt/conda/lib/python3.10/site-packages/triton/compiler/compiler.py)")
    assert top(line) != "startup#fused-kernels"


# -- containers ------------------------------------------------------------------------------


def test_worker_killed_by_sigbus_is_dev_shm():
    text = excerpt("containers/sigbus_exitcode_7_axolotl_891.log")
    assert top(text) == "containers#dev-shm-size"
    # torchelastic's summary block, as https://github.com/awslabs/slapo/issues/114 shows it
    assert top("  traceback : Signal 7 (SIGBUS) received by PID 100") == "containers#dev-shm-size"
    # another signal is not a bus error
    line = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) "
            "local_rank: 0 (pid: 514946) of binary:")
    assert "containers#dev-shm-size" not in links(line)
    # a DataLoader worker's own bus error stays the data pipeline's
    line = ("ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm).")
    assert top(line) == "data-pipeline#shm-exhausted"


def test_efa_provider_enomem_is_memlock():
    text = excerpt("containers/efa_post_recv_buffers_enomem_awsome_distributed_ai_647.log")
    assert top(text) == "containers#memlock-limit"
    # the provider's other internal errors (not -12) are not a memory limit
    assert "containers#memlock-limit" not in links(
        "EFA internal error: (4112) Failure to post internal receive buffers")


# -- nccl-hang / multi-node ------------------------------------------------------------------


def test_hca_fatal_async_event_is_the_link_question():
    text = excerpt("nccl-hang/ib_local_catastrophic_error_nccl_230.log")
    assert top(text) == "nccl-hang#ib-flap"
    # a verbs call that fails at set-up stays the infiniband question
    line = "spark01:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed"
    assert top(line) == "multi-node#infiniband"


def test_refused_nccl_socket_is_the_interface():
    text = excerpt("multi-node/recv_connection_refused_gpt_neox_1147.log")
    assert top(text) == "multi-node#network-interface"
    # a connection that broke after it worked is the remote error (the tree's counterexample)
    line = "socketProgressOpt: Call to recv from 10.119.24.53<49901> failed : Broken pipe"
    assert top(line) == "nccl-hang#remote-error"


def test_timeout_next_to_fsdp_state_dict_warning_is_a_save():
    text = excerpt("checkpoint/fsdp_save_allgather_timeout_rank0_pytorch_143536.log")
    assert top(text) == "checkpoint#save-hang"
    # a timeout with no save near it stays the watchdog's question (the signature's example)
    line = ("[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, "
            "NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")
    assert top(line) == "nccl-hang#watchdog-timeout"


# -- scheduler -------------------------------------------------------------------------------


def test_slurm_cancel_without_reason_is_the_scheduler_question():
    text = excerpt("scheduler/preempted_restart_from_scratch_everyvoice_183.log")
    assert top(text) == "scheduler#who-ended"
    # a cancel with its reason keeps that reason's node
    line = ("slurmstepd: error: *** JOB 494583 ON ... CANCELLED AT 2024-04-20T09:09:37 DUE TO "
            "TIME LIMIT ***")
    assert links(line) == ["scheduler#time-limit"]
    # a cause in the same log leads (the step was cancelled after the cgroup's OOM kill)
    text = excerpt("scheduler/slurm_cgroup_oom_kill_mmdet_knet_30.log")
    assert top(text) == "scheduler#cgroup-oom-kill"
