"""General rules from the tune-5 round on the infrastructure trees: imports that name their
cause (Megatron's dataset helpers, a C++ runtime too old, Triton internals), assert source
lines of a batch split and of Megatron's dataset index, slurmctld's signal line, c10d's store
connect and wait failures, a peer gone mid-transfer, GPUDirect RDMA off, a topology matrix
without a peer-to-peer path, and a log that ends on a logger's end-of-run summary.

Each rule is checked on a real tune case (tests/corpus, source URL on its first line) and on a
real line it must leave alone.
"""

from __future__ import annotations

from .routed import links, top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)

# -- startup and compile: the import error names its cause -----------------------------------

def test_megatron_dataset_helpers_import_is_the_fused_kernels_node():
    text = excerpt("startup/megatron_data_helpers_import_neuron_gpt3_592.log")
    assert top(text) == "startup#fused-kernels"


def test_glibcxx_version_not_found_is_the_version_matrix():
    text = excerpt("startup/glibcxx_3_4_32_gymtorch_extension_grx_gym_6.log")
    assert top(text) == "startup#version-matrix"
    # a library that is missing altogether stays the missing-library node
    line = "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory"
    assert top(line) == "startup#missing-shared-library"


def test_a_name_missing_from_triton_internals_is_a_triton_version_mismatch():
    text = excerpt("compile/triton_attrsdescriptor_import_mismatch_comfyui_7106.log")
    assert top(text) == "compile#triton-version-mismatch"
    # Triton not installed at all is a plain import error, not a version mismatch
    assert top("ModuleNotFoundError: No module named 'triton'") == "startup#import-error"


# -- assert source lines ---------------------------------------------------------------------

def test_batch_size_assert_over_devices_is_the_batch_size_node():
    text = excerpt("startup/batch_size_not_multiple_of_3_gpus_matchsum_11.log")
    assert top(text) == "startup#batch-size"
    # a model dimension over a parallel size stays the divisibility node
    line = ("[rank14]:     assert num_layers % args.transformer_pipeline_model_parallel_size"
            " == 0, \\")
    assert top(line) == "startup#divisibility"


def test_megatron_index_count_assert_is_a_corrupt_dataset():
    text = excerpt("data-pipeline/merged_indexed_dataset_doc_idx_assert_nemo_9821.log")
    assert top(text) == "data-pipeline#corrupt-dataset-files"


# -- scheduler -------------------------------------------------------------------------------

def test_slurmctld_wtermsig_asks_who_ended_the_job():
    text = excerpt("scheduler/slurmctld_wtermsig9_silent_kill_node_c014_arjuna_137.log")
    assert top(text) == "scheduler#who-ended"
    # a batch script that exited by itself is no finding
    assert links("[2022-10-20T20:05:30.345] _job_complete: JobId=50922 WEXITSTATUS 0") == []


def test_a_log_ending_in_the_wandb_run_summary_hangs_on_exit():
    text = excerpt("scheduler/exit_hang_after_training_wandb_ddp_docker_yolov5_5160.log")
    assert links(text) == []  # log only: a finished run's summary is no error
    assert top(text, "hang") == "scheduler#exit-hang"


# -- multi-node and nccl-hang ----------------------------------------------------------------

def test_store_unreachable_at_every_address_is_the_master_address():
    text = excerpt("multi-node/client_socket_bad_address_opensora_667.log")
    assert top(text) == "multi-node#master-addr"
    # one address's retry warning alone is what workers print while the master starts
    line = ("[W socket.cpp:697] [c10d] The client socket has failed to connect to "
            "0.104.99.143:47389 (errno: 110 - Connection timed out).")
    assert links(line) == []


def test_broken_pipe_on_an_established_nccl_socket_is_a_remote_error():
    text = excerpt("nccl-hang/remote_error_broken_pipe_llamafactory_6849.log")
    assert top(text) == "nccl-hang#remote-error"
    # "Connection closed by remote peer" while connecting stays in the multi-node tree
    setup = excerpt("multi-node/net_ib_no_device_socket_connection_closed_nccl_952.log")
    assert top(setup).startswith("multi-node#")


def test_a_real_timeout_is_still_a_watchdog_timeout():
    # the watchdog's "Some NCCL operations have failed or timed out" without a NCCL error
    text = excerpt("checkpoint/midepoch_save_then_watchdog_desync_torchtune_1107.log")
    assert "nccl-hang#remote-error" not in links(text)


def test_store_wait_timeout_while_rank0_tokenizes_is_timeout_too_short():
    text = excerpt("nccl-hang/tokenize_rank0_store_timeout_axolotl_2684.log")
    assert top(text) == "nccl-hang#timeout-too-short"
    # the wait's timeout line alone is the watchdog question
    line = ("[rank1]:[W516 14:34:56.854597329 socket.cpp:489] [c10d] waitForInput: socket "
            "SocketImpl(fd=79, addr=[localhost]:41170, remote=[localhost]:29500) timed out "
            "after 1800000ms")
    assert top(line) == "nccl-hang#watchdog-timeout"


def test_gdr_off_leads_only_for_a_slow_run():
    disabled = excerpt("multi-node/gdr_disabled_roce_peermem_nccl_1537.log")
    assert links(disabled) == []  # many machines run without GDR: no alarm by itself
    assert top(disabled, "slow") == "multi-node#gdr-disabled"
    one_side = excerpt("multi-node/peermem_missing_one_node_nccl_tests_152.log")
    assert top(one_side, "slow") == "multi-node#gdr-disabled"
    line = ("gpu32:22612:22693 [0] NCCL INFO Channel 00 : 0[7000] -> 8[7000] [send] "
            "via NET/IB/1/GDRDMA")
    assert "multi-node#gdr-disabled" not in links(line, "slow")  # this channel has GDR


def test_topology_matrix_through_the_cpu_answers_a_slow_run():
    text = excerpt("nccl-hang/p2p_over_sys_pcie_slow_multi_gpu_transformers_9371.log")
    assert links(text) == []
    assert top(text, "slow") == "nccl-hang#topology"
    nvlink = ("GPU0     X      NV12    NV12    NV12    NV12    NV12    NV12    NV12    PXB     "
              "PXB     SYS     SYS     SYS     SYS     SYS     SYS     SYS     SYS     SYS     "
              "SYS     48-63,176-191   3               N/A")
    assert "nccl-hang#topology" not in links(nvlink, "slow")
