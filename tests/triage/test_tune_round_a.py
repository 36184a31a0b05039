"""Message classes added in the tuning round (issue 15), each on a real tune case of the corpus
and a line that must not be taken for it.

Whole excerpts are real public cases (tests/corpus, tune split); single lines are taken from
them verbatim, or are counter-examples of a neighbouring message.
"""

from __future__ import annotations

import pytest

from trainmedic.triage import triage_text

from .test_node_precision import tune  # a tune case's excerpt (refuses holdout cases)


def first(text: str):
    findings = triage_text(text).findings
    assert findings, text[:200]
    return findings[0]


@pytest.mark.parametrize(("case", "signature", "link"), [
    # Lightning's own wording of DDP's unused-parameter check
    ("sharding/lightning_ddp_unused_parameters_rank3_chemprop_853.log",
     "lightning-ddp-unused-parameters", "sharding#ddp-unused-parameters"),
    # autograd refusing a bf16 gradient on an fp32 flat parameter (FSDP mixed precision)
    ("sharding/fsdp_mp_compile_assign_bf16_grad_to_float_tensor_interleaved_pytorch_111317.log",
     "mixed-precision-dtype", "sharding#fsdp-mixed-precision-dtype"),
    # ProcessGroupNCCL could not fetch the NCCL id through the c10d store
    ("multi-node/tcpstore_get_unique_id_socket_timeout_barrier_vllm_zero2_openrlhf_211.log",
     "nccl-unique-id-store", "multi-node#rendezvous"),
    # the agent's traceback inside the c10d rendezvous store calls, its error line cut off
    ("multi-node/rdzv_sync_call_store_raise_ray_commandactor_limited_ports_torchx_540.log",
     "rendezvous-store-frames", "multi-node#rendezvous"),
    # an elastic agent that can no longer renew its membership: a node is gone
    ("multi-node/elastic_keepalive_rendezvous_connection_error_node_crash_hang_pytorch_76287.log",
     "rendezvous", "multi-node#elastic"),
    # NCCL's proxy socket reset by the peer mid-run: a remote error, not the launcher's store
    ("nccl-hang/k8s_flannel_pods_proxy_write_recv_connection_reset_nccl_193.log",
     "rendezvous", "nccl-hang#remote-error"),
    # IB completion error 5 (work request flushed): the queue pair had already failed
    ("nccl-hang/ncclremoteerror_net_ib_completion_error5_multinode_deepep_106.log",
     "nccl-ib", "nccl-hang#remote-error"),
    # NCCL's WARN naming the failing CUDA call, without PyTorch's summary line
    ("nccl-hang/nccl_warn_cuda_failure_operation_not_supported_mempool_ci_torchtune_2556.log",
     "nccl-unhandled-cuda", "nccl-hang#nccl-error"),
    # NCCL 2.1's verbs WARN (no "NCCL " prefix): a queue pair it cannot create -> memlock
    ("containers/ibv_create_qp_failed_nccl21_memlock_horovod_98.log",
     "ib-verbs-setup", "containers#memlock-limit"),
    # a batch that does not split into micro-batches, in "not a multiple of" words
    ("startup/batch_size_dpo_data_dict_not_multiple_microbatch_nemo_rl_355.log",
     "batch-size", "startup#batch-size"),
    # dynamo's warning for the accumulated limit (all frames of one function)
    ("compile/accumulated_recompile_limit_256_windows_offload_wan2gp_653.log",
     "dynamo-recompile-limit", "compile#recompile-limit"),
    # Inductor's own raise in a traceback logged as dynamo's warning (error line cut off)
    ("compile/inductor_error_compile_fx_warning_fallback_seedvr2_507.log",
     "backend-compiler-failed", "compile#backend-compiler-failed"),
    # NVSHMEM's IBGDA transport failing at init under DeepEP
    ("moe/nvshmem_ibgda_unable_to_create_ah_dct_deepep_b300_bridge_5050.log",
     "nvshmem-transport-init", "moe#ep-dispatch-timeout"),
    # the main process' frame waiting on the loader's worker queue (error line cut off)
    ("data-pipeline/dataloader_timeout_azure_data_lake_wrapped_pytorch_33296.log",
     "dataloader-queue-wait-frame", "data-pipeline#symptom"),
    # a Ctrl-C traceback and nothing else: the user stopped a job that froze
    ("nccl-hang/allennlp_worker_completed_entire_epoch_then_hang_5030.log",
     "user-interrupt", "nccl-hang#silent-hang"),
    # rank 7's watchdog says it is blocked in NCCL/CUDA: it is in the hang, not silent
    ("nccl-hang/timeout_then_watchdog_stuck_allgather_arctic_219.log",
     "nccl-watchdog-timeout", "nccl-hang#watchdog-timeout"),
])
def test_tune_case_goes_to_its_node(case: str, signature: str, link: str) -> None:
    finding = first(tune(case))
    assert (finding.signature, finding.link) == (signature, link)


def test_ib_completion_retry_errors_still_go_to_the_flap_fix():
    line = ("kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion "
            "from peer 10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)")
    assert first(line).link == "nccl-hang#ib-flap"


def test_a_verbs_call_that_failed_for_another_reason_stays_on_infiniband():
    line = "spark01:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed"
    assert first(line).link == "multi-node#infiniband"


def test_a_launcher_store_reset_is_still_rendezvous():
    line = ("[W socket.cpp:601] [c10d] The client socket has failed to connect; "
            "recvValue failed: Connection reset by peer")
    assert first(line).link == "multi-node#rendezvous"


def test_nccl_init_return_chain_alone_is_no_cuda_failure():
    found = triage_text("ip-10-0-9-191:95209:95228 [0] NCCL INFO init.cc:1397 -> 1").findings
    assert all(f.signature != "nccl-unhandled-cuda" for f in found)


def test_a_head_count_that_is_not_a_multiple_is_not_a_batch_size_error():
    line = "ValueError: hidden_size (4096) is not a multiple of the number of attention heads (48)"
    assert all(f.signature != "batch-size" for f in triage_text(line).findings)


def test_a_rank_whose_watchdog_is_stuck_is_not_counted_as_silent():
    report = triage_text(tune("nccl-hang/timeout_then_watchdog_stuck_allgather_arctic_219.log"))
    assert all(f.signature != "rank-silent" for f in report.findings)
    stuck = next(f for f in report.findings if f.signature == "nccl-watchdog-stuck")
    assert stuck.ranks == [7]


def test_code_that_catches_keyboardinterrupt_is_no_interrupt():
    found = triage_text("    except KeyboardInterrupt:\n        pass").findings
    assert all(f.signature != "user-interrupt" for f in found)
