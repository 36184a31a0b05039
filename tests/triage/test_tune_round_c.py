"""Rules of the batch-3 tuning round (node precision on messages a blind batch missed), each on
the tune case that showed the gap (tests/corpus, tune split; source URL on each case's line 1)
and a line that must not take the same path."""

from __future__ import annotations

from .routed import links
from .test_tune_round_b import top_link  # reads a tune case only (asserts its split)


def test_an_oom_in_an_evaluation_frame_is_the_evaluation_oom():
    """An OOM raised under evaluation frames with little cached memory is the evaluation node
    (defrcn #65); with GiBs reserved but unallocated (czsl #7: 3.17 GiB of 10.92) the tree's
    second question, read from the message before it asks when, says fragmentation."""
    assert top_link("oom/eval_oom_resnet_conv2d_training_fine_defrcn_65.log") == "oom#eval-oom"
    assert top_link("oom/open_world_eval_scores_oom_cpu_eval_flag_czsl_7.log") == \
        "oom#fragmentation"


def test_a_kill_while_checkpoint_shards_load_is_the_loading_node():
    """A -9 (minicpm-v #312) or a `Killed` glued to the loading bar (video-llava #13) while
    'Loading checkpoint shards' runs: host RAM while loading, the host-ram question's answer."""
    assert top_link("oom/torchrun_exit9_loading_shards_minicpm_v_312.log") == "oom#host-ram-load"
    assert top_link("oom/loading_shards_killed_host_ram_video_llava_13.log") == \
        "oom#host-ram-load"
    # a kill with no loading in sight stays the general host-RAM node
    assert links("step 120 loss 2.31\nKilled") == ["oom#host-ram"]


def test_rusts_allocation_failure_is_host_ram():
    """DeepSpeed-Chat #321: 'memory allocation of N bytes failed' (Rust's abort) on several
    ranks, then the launcher kills the rest: host memory ran out."""
    assert top_link("oom/ds_chat_step2_host_memory_allocation_failed_sigkill_321.log") == \
        "oom#host-ram"


def test_slurms_memory_accounting_kill_is_the_cgroup_node():
    """coqui STT #2238: 'Job N exceeded memory limit (A > B), being killed'; the peak-only
    warning printed after a step ends is not a kill."""
    assert top_link("scheduler/slurmstepd_job_exceeded_memory_limit_being_killed_coqui_stt_"
                    "2238.log") == "scheduler#cgroup-oom-kill"
    assert "scheduler#cgroup-oom-kill" not in links(
        "slurmstepd: error: Exceeded job memory limit at some point.")


def test_checkpoint_write_and_open_failures():
    """h2o-llmstudio #214: the zip writer's 'file write failed' is the full-disk answer of the
    save-error question; ronin #51: torch.save's 'File ... cannot be opened.' leaves the
    question open (full disk or unwritable path)."""
    assert top_link("checkpoint/streamwriter_file_write_failed_output_volume_full_h2o_llmstudio_"
                    "214.log") == "checkpoint#disk-full"
    assert top_link("checkpoint/checkpoint_cannot_be_opened_disk_full_ronin_51.log") == \
        "checkpoint#save-error"
    assert "checkpoint#save-error" not in links("Error! The file data.txt cannot be opened.")


def test_the_weights_only_messages_last_line_alone_is_enough():
    """open-instruct #673: only the message's last line ('... types accepted by default with
    weights_only ...') survived in the paste."""
    assert top_link("checkpoint/accelerate_load_state_weights_only_open_instruct_673.log") == \
        "checkpoint#weights-only-default"


def test_llava_style_tokenization_mismatch_is_the_template():
    """Bunny #75, LLaVA #1706: 'WARNING: tokenization mismatch: N vs. M. (ignored)' means the
    conversation template masked the sample away: the template node."""
    assert top_link("convergence/bunny_llama3_finetune_tokenization_mismatch_loss_grad_norm_zero_"
                    "75.log") == "convergence#template-mismatch"
    assert top_link("convergence/llava_v16_34b_tokenization_mismatch_loss_zero_wrong_conv_version_"
                    "1706.log") == "convergence#template-mismatch"
    assert links("Token indices sequence length is longer than the specified maximum sequence "
                 "length for this model (2345 > 2048)") == []


def test_roce_queue_pair_invalid_argument_is_the_gid_node():
    """nccl #622 (Intel E810, RoCE): ibv_modify_qp refused as an invalid argument goes where the
    containers tree sends that message; the same call timing out stays an InfiniBand fault."""
    assert top_link("containers/intel_e810_roce_ibv_modify_qp_invalid_argument_nccl_622.log") == \
        "containers#roce-gid"
    timeout = ("node:1112:13532 [0] ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with "
               "error Connection timed out")
    assert links(timeout)[:1] == ["multi-node#infiniband"]


def test_ofi_plugin_without_a_provider_and_a_gpu_that_did_not_initialise():
    """aws-ofi-nccl #67: no libfabric provider found; pai #4344: the driver's RmInitAdapter
    failure on a node whose nvidia-smi shows a GPU fewer."""
    assert top_link("containers/p4d_ofi_no_optimal_provider_efa_after_nccl_upgrade_aws_ofi_nccl_"
                    "67.log") == "containers#ofi-net-plugin"
    assert top_link("hardware/node_4_gpus_nvidia_smi_shows_3_rminitadapter_failed_pai_4344.log") \
        == "hardware#fallen-off-bus"


def test_a_jit_extension_directory_without_permission_is_the_extension_build():
    """pytorch #34238: the shared /tmp/torch_extensions of another user refuses the build; the
    DeepSpeed line naming that root is not an error."""
    assert top_link("startup/cpp_extension_shared_tmp_build_dir_permission_pytorch_34238.log") \
        == "startup#extension-build"
    assert links("Using /tmp/torch_extensions as PyTorch extensions root...") == []


def test_old_deepspeeds_overflow_line_and_a_scale_already_in_single_digits():
    """deepspeed #697: DeepSpeed before 0.4 wrote 'Overflow detected. Skipping step. Attempted
    loss scale: 8.0, reducing to 4.0'; a dynamic scale reduced into single digits with no higher
    scale in the log fell before the excerpt: a collapse. One halving from 2^16 is not."""
    assert top_link("loss-spike/ds_fp16_grad_overflow_scale_8_to_4_model_not_learning_deepspeed_"
                    "697.log") == "loss-spike#loss-scale-collapse"
    one = ("[2021-01-26 22:04:09,191] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. "
           "Skipping step. Attempted loss scale: 65536, reducing to 32768.0")
    assert "loss-spike#loss-scale-collapse" not in links(one)


def test_a_time_limit_or_ctrl_c_right_after_training_finished_is_the_exit_hang():
    """Megatron-Bridge #1656 ('[after training is done]' then the time limit) and fairseq #4619
    ('done training in ...' then Ctrl-C): training ended, the processes did not. Without the
    framework's line, a time limit is a time limit."""
    assert top_link("scheduler/qwen3_30b_done_training_hangs_until_slurm_time_limit_nsys_"
                    "megatron_bridge_1656.log") == "scheduler#exit-hang"
    assert top_link("scheduler/fairseq_ddp_done_training_wandb_no_finish_hangs_ctrl_c_"
                    "4619.log") == "scheduler#exit-hang"
    limit = ("slurmstepd: error: *** STEP 4226796.2 ON eos0117 CANCELLED AT "
             "2025-12-03T14:53:02 DUE TO TIME LIMIT ***")
    assert links(" iteration      100/  500000 | lm loss: 2.31\n" + limit)[:1] == \
        ["scheduler#time-limit"]


def test_a_closed_rendezvous_is_the_elastic_node():
    """pytorch #150916: killing one node's agent closed the rendezvous and the other node's
    agent raised RendezvousClosedError: the job does not survive a node's loss (elastic); an
    agent that cannot reach the store at all stays the rendezvous question."""
    assert top_link("multi-node/agent_killed_other_node_death_signal_15_pytorch_150916.log") == \
        "multi-node#elastic"
    assert links("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The "
                 "connection to the C10d store has failed.")[:1] == ["multi-node#rendezvous"]
