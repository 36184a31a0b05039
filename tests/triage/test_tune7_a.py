"""General rules from the tune-7 round on the infrastructure trees (multi-node, nccl-hang,
containers, scheduler, hardware, slow-training, preflight, moe, sharding): torchrun forwarding
SIGHUP to its workers, torch's monitored barrier naming the rank behind, a launch script that
cannot resolve a host name of the job, and timers where the optimizer step takes the iteration.

Each rule is checked on a real tune case (tests/corpus, source URL on its first line) and on a
real line it must leave alone.
"""

from __future__ import annotations

from trainmedic.triage import optimizer_share

from .routed import links, top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)

# -- scheduler -------------------------------------------------------------------------------


def test_closing_signal_sighup_is_the_closed_session():
    text = excerpt("scheduler/sighup_closing_signal_two_3090_after_one_hour_pytorch_67538.log")
    assert top(text) == "scheduler#sighup-session-closed"
    # SIGTERM is also what the agent sends the others after a worker's own failure
    # (https://github.com/hpcaitech/ColossalAI/issues/3514)
    line = ("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 812914 "
            "closing signal SIGTERM")
    assert "scheduler#sighup-session-closed" not in links(line)
    assert "scheduler#sigterm-received" not in links(line)


# -- nccl-hang -------------------------------------------------------------------------------


def test_monitored_barrier_names_the_rank_behind():
    text = excerpt("nccl-hang/monitored_barrier_rank0_faulty_grpo_vllm_trl_2923.log")
    assert top(text) == "nccl-hang#rank-behind"
    # the gloo timeout alone names nobody: it stays the timeout symptom
    line = ("[rank3]: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] Timed out "
            "waiting 600000ms for send operation to complete")
    assert top(line) == "nccl-hang#watchdog-timeout"


# -- multi-node ------------------------------------------------------------------------------


def test_launch_script_host_not_resolved_is_the_master_address():
    text = excerpt("multi-node/master_hostname_not_resolved_dlc_grpo_ms_swift_6368.log")
    assert top(text) == "multi-node#master-addr"
    # a model download that cannot resolve its hub is no master address
    # (https://github.com/cloneofsimo/lora/issues/200)
    line = "socket.gaierror: [Errno -3] Temporary failure in name resolution"
    assert "multi-node#master-addr" not in links(line)


# -- slow-training ---------------------------------------------------------------------------


def test_optimizer_step_taking_the_iteration_is_the_optimizer_node():
    text = excerpt("slow-training/cpu_adam_optimizer_step_22s_zero3_offload_deepspeed_1635.log")
    assert top(text) == "slow-training#optimizer-step"
    # a healthy ZeRO run's timers: the step is 42% of the three, no finding
    # (https://github.com/huggingface/accelerate/issues/1589)
    healthy = excerpt("healthy/deepspeed_wall_clock_breakdown_timers_tqdm_accelerate_1589.log")
    assert "slow-training#optimizer-step" not in links(healthy)


def test_optimizer_share_reads_each_framework_timer_line():
    # Megatron-LM's names: forward-backward and optimizer
    assert optimizer_share.read_line(
        " time (ms) | forward-backward: 1000.0 | optimizer: 3000.0") == {"shares": [0.75]}
    # a timer line with the step alone says nothing about its share
    assert optimizer_share.read_line(
        "time (ms) | update_optims: 21766.25 | unscale_grads: 506.45 | optimizer_step: 22850.66"
    ) == {}
    assert optimizer_share.read_line("step: 5 loss: 2.0") == {}


def test_failed_proxy_connect_under_a_system_error_is_the_interface():
    text = excerpt("multi-node/barrier_unhandled_system_error_connect_res3_ray_verl_108.log")
    assert top(text) == "multi-node#network-interface"
    # the system error alone (no failed connect under it) stays the NCCL error question
    line = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1333, unhandled system error (run with NCCL_DEBUG=INFO for "
            "details), NCCL version 2.18.6")
    assert top(line) == "nccl-hang#nccl-error"


def test_deepspeed_ssh_check_is_the_multi_node_tree():
    text = excerpt("multi-node/deepspeed_ssh_check_exit_255_two_nodes_deepspeed_4907.log")
    assert top(text) == "multi-node#symptom"
    # another command's failure is no ssh check: the JIT build of an op
    # (https://github.com/deepspeedai/DeepSpeed/issues/6892)
    line = ("[rank1]: subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero "
            "exit status 1.")
    assert "multi-node#symptom" not in links(line)


# -- sharding --------------------------------------------------------------------------------


def test_parameters_printed_with_shape_zero_are_zero3_placeholders():
    text = excerpt("sharding/reward_model_params_size0_zero3_deepspeedexamples_820.log")
    assert top(text) == "sharding#zero3-partitioned-params"
    # a named parameter with a real shape is nothing
    assert links("name=rwtransformer.layers.25.self_attn.q_proj.weight, "
                 "param=torch.Size([4096, 4096])") == []


# -- scheduler -> nccl-hang: Ctrl-C in the launcher's terminal -------------------------------


def test_launcher_sigint_is_the_user_interrupt_of_a_frozen_job():
    text = excerpt("nccl-hang/ddp_stuck_after_reducer_buckets_ctrl_c_rtd_action_31.log")
    assert top(text) == "nccl-hang#silent-hang"
    # signal 15 with no scheduler line stays the SIGTERM node
    # (https://github.com/PrimeIntellect-ai/prime-rl/issues/1360)
    line = ("W1130 12:13:49.388000 124326 torch/distributed/elastic/agent/server/api.py:723] "
            "Received 15 death signal, shutting down workers")
    assert top(line) == "scheduler#sigterm-received"
