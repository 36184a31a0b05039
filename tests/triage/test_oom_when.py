"""The oom tree's "when does the job run out of memory?" answered from the log where it says so
(issue 15, tune-4 round): inside an evaluation pass, while the model is moved to the GPU, in a
training step a framework recovers from; and Ray's memory monitor as host RAM.

Whole excerpts are real tune cases of the corpus; single lines are taken from them verbatim
(the HF Trainer's evaluation banner and progress dict are that framework's fixed output).
"""

from __future__ import annotations

import pytest

from trainmedic.triage import triage_text
from trainmedic.triage.signatures import evaluation_started

from .routed import top
from .test_node_precision import tune  # a tune case's excerpt (refuses holdout cases)

# the allocator's message of a tune case (DeFRCN #65): 0.23 GiB cached beyond what is allocated
OOM = ("RuntimeError: CUDA out of memory. Tried to allocate 32.00 MiB (GPU 0; 14.56 GiB total "
       "capacity; 13.34 GiB already allocated; 15.50 MiB free; 13.57 GiB reserved in total by "
       "PyTorch)")
HF_EVAL_BANNER = "***** Running Evaluation *****"
HF_PROGRESS = ("{'loss': 0.2051, 'grad_norm': 0.31, 'learning_rate': 9.774074342405685e-06, "
               "'epoch': 0.53}")


@pytest.mark.parametrize(("case", "link"), [
    # the traceback runs through a file of the project's evaluation/ package
    ("oom/eval_oom_resnet_conv2d_training_fine_defrcn_65.log", "oom#eval-oom"),
    # "starting evaluation" comes before the allocator's message
    ("oom/first_evaluation_oom_after_500_iters_changemamba_37.log", "oom#eval-oom"),
    # Module.to()'s converter: the whole model is being moved to the GPU
    ("oom/model_to_gpu_before_zero3_dschat_step3_alpaca_rlhf_6.log", "oom#model-init"),
    # fairseq's per-batch OOM recovery: a training step of a running job
    ("oom/fairseq_oom_epoch2_recover_fails_finetune_2867.log", "oom#later"),
    ("oom/fairseq_oom_skipping_batch_then_process3_dies_869.log", "oom#later"),
    # the raylet killed a worker for host RAM
    ("oom/ray_memory_monitor_killed_actor_openrlhf_911.log", "oom#host-ram"),
])
def test_the_log_answers_when(case, link):
    assert top(tune(case)) == link


def test_an_oom_message_alone_leaves_the_question():
    assert top(OOM) == "oom#when"


def test_an_oom_after_an_evaluation_banner_is_an_evaluation_oom():
    assert top("\n".join([HF_PROGRESS, HF_EVAL_BANNER, OOM])) == "oom#eval-oom"


def test_training_progress_after_the_evaluation_ends_it():
    # the evaluation finished and training went on: the OOM is a training step's
    assert top("\n".join([HF_EVAL_BANNER, HF_PROGRESS, OOM])) == "oom#when"


@pytest.mark.parametrize(("line", "started"), [
    (HF_EVAL_BANNER, True),
    # the format strings of Megatron-LM's evaluate() (verbose) and detectron2's
    # inference_on_dataset, filled in
    ("Evaluating iter 3/10", True),
    ("Start inference on 500 batches", True),
    # mmcv 1.x prints Epoch(val) with the results, once the evaluation is over (healthy tune log)
    ("2021-07-14 13:52:36,901 - mmcls - INFO - Epoch(val) [1][2]\taccuracy_top-1: 22.000", False),
    (HF_PROGRESS, False),
    # a word that only begins like one (a counter-example of ours)
    ("Starting evaluation_strategy=steps", False),
])
def test_evaluation_start_lines(line, started):
    assert evaluation_started(line) is started


RAY_TASK_ERROR = "oom/ray_task_error_oom_dtensor_worker_get_logprobs_ppo_default_nemo_rl_3793.log"
# its first line, verbatim: the exception's name, the message is cut off
RAY_LINE = ("ray.exceptions.RayTaskError(OutOfMemoryError): "
            "ray::DTensorPolicyWorkerV2.get_logprobs() (pid=2671339, ip=10.65.16.209, "
            "actor_id=d5836b60449efbd220b3c2f406000000, "
            "repr=DTensorPolicyWorkerV2[rank=0])")


def test_the_exceptions_name_alone_stays_at_which_message():
    # not Ray's memory monitor (host RAM) either: a task raised an OutOfMemoryError
    assert top(tune(RAY_TASK_ERROR)) == "oom#message"


@pytest.mark.parametrize("lines", [[RAY_LINE, OOM], [OOM, RAY_LINE]])
def test_the_allocators_message_answers_which_message(lines):
    links = [f.link for f in triage_text("\n".join(lines)).findings]
    assert links[0] == "oom#when" and "oom#message" not in links
