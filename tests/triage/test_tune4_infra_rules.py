"""General rules from the tune-4 round on the infrastructure trees: ranks that disagree on a
collective, Lightning's DDP world that never forms, NVML's lost GPU, Inductor lowering errors,
the assert line of a divisibility check, a missing training-data path, RoCE queue pairs.

Each rule is checked on a real tune case (tests/corpus, source URL on its first line) and on a
real line it must leave alone.
"""

from __future__ import annotations

import pytest

from trainmedic.triage import triage_text
from trainmedic.triage.rank_compare import RankCompare
from trainmedic.triage.trends import WorldJoin

from .routed import top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)

# -- ranks that disagree -------------------------------------------------------------------

def test_ranks_at_different_sequence_numbers_name_the_lower_one_behind():
    # LlamaFactory #2902: rank 0 and rank 1 glued on one pasted line, at #1516 and #1517
    text = excerpt("nccl-hang/ranks_disagree_seqnum_allreduce_llamafactory_2902.log")
    report = triage_text(text)
    assert report.findings[0].link == "nccl-hang#rank-behind"
    assert report.findings[0].ranks == [0]
    states = {s["rank"]: s["seq"] for s in report.to_dict()["ranks"]["states"]}
    assert states == {0: 1516, 1: 1517}  # both glued records were read


def test_one_sequence_number_everywhere_is_not_behind():
    # YOLOv8 #2023's three timeouts at one sequence number, rank 0 among them: nobody behind
    lines = excerpt("nccl-hang/broadcast_timeout_rank0_missing_yolov8_ul2023.log").splitlines()
    timeouts = [ln for ln in lines if "Watchdog caught" in ln]
    rc = RankCompare()
    for i, line in enumerate(timeouts):
        rc.feed(line, int(line.split("[Rank ")[1].split("]")[0]) - 1, ("log", i))  # ranks 0..2
    assert [v.kind for v in rc.verdicts({0, 1, 2})] == ["uniform"]


def test_rank_zero_silent_when_ranks_one_to_k_time_out():
    text = excerpt("nccl-hang/broadcast_timeout_rank0_missing_yolov8_ul2023.log")
    first = triage_text(text).findings[0]
    assert (first.link, first.ranks) == ("nccl-hang#rank-behind", [0])


def test_ranks_not_starting_at_one_do_not_accuse_rank_zero():
    # the same lines read as ranks 9..11 (another node's log): rank 0 is not in this log at all
    lines = excerpt("nccl-hang/broadcast_timeout_rank0_missing_yolov8_ul2023.log").splitlines()
    rc = RankCompare()
    for i, line in enumerate(ln for ln in lines if "Watchdog caught" in ln):
        rc.feed(line, 9 + i, ("log", i))
    assert all(v.kind != "silent" for v in rc.verdicts({9, 10, 11}))


# -- Lightning's DDP world -----------------------------------------------------------------

def test_duplicated_global_ranks_are_node_rank():
    text = excerpt("multi-node/duplicate_global_ranks_srun_lightning_4389.log")
    first = triage_text(text).findings[0]
    assert (first.link, first.kind) == ("multi-node#node-rank", "cause")


def test_half_the_world_is_node_rank_symptom():
    text = excerpt("multi-node/half_the_ranks_join_slurm_lightning_8707.log")
    first = triage_text(text).findings[0]
    assert (first.link, first.kind) == ("multi-node#node-rank", "symptom")


def test_a_world_that_registered_is_silent():
    # the 8707 announcements, then rank 0's registration line of a healthy run (nccl #676)
    members = [ln for ln in excerpt("multi-node/half_the_ranks_join_slurm_lightning_8707.log")
               .splitlines() if "GLOBAL_RANK" in ln]
    registered = next(ln for ln in excerpt(
        "healthy/nccl_forced_socket_two_nodes_barrier_ok_nccl_676.log").splitlines()
        if "processes registered" in ln)
    world = WorldJoin()
    for i, line in enumerate([*members, *members, registered]):
        world.feed(line, "log", i)
    assert world.duplicated() is None and world.partial() is None
    assert top("\n".join([*members, registered])) is None


def test_a_log_without_rank_zero_is_not_partial():
    members = [ln for ln in excerpt("multi-node/half_the_ranks_join_slurm_lightning_8707.log")
               .splitlines() if "GLOBAL_RANK" in ln and "GLOBAL_RANK: 0," not in ln]
    world = WorldJoin()
    for i, line in enumerate(members):
        world.feed(line, "log", i)
    assert world.partial() is None


# -- single messages -------------------------------------------------------------------------

@pytest.mark.parametrize(("relative", "link"), [
    ("hardware/nvml_gpu_is_lost_slurmstepd_plmfit_40.log", "hardware#fallen-off-bus"),
    ("compile/inductor_error_from_lowering_index_put_megatron_gpt_pt_97137.log",
     "compile#backend-compiler-failed"),
    ("startup/layers_not_divisible_pp4_glm45_air_swift_5737.log", "startup#divisibility"),
    ("startup/bert_pretraining_hdf5_dir_missing_dle_844.log", "startup#data-path"),
    ("containers/roce_modify_qp_timeout_rail_cross_nic_nccl_2013.log", "containers#roce-gid"),
    ("multi-node/tcpstore_client_timeout_localhost_controlnet_382.log", "multi-node#master-addr"),
])
def test_tune4_case_goes_to_its_node(relative: str, link: str):
    assert top(excerpt(relative)) == link


def test_a_modify_qp_timeout_without_a_roce_gid_stays_infiniband():
    text = excerpt(
        "multi-node/ibv_modify_qp_connection_timed_out_update_weight_vllm_openrlhf_335.log")
    assert top(text) == "multi-node#infiniband"


@pytest.mark.parametrize("relative", [
    # a per-rank checkpoint file and a multi-node index cache are not the training data's path
    "checkpoint/converted_ckpt_missing_zero_optim_states_13b_pp_transpeeder_28.log",
    "preflight/megatron_ds_multinode_index_cache_doc_idx_npy_not_found_other_node_356.log",
])
def test_other_missing_files_are_not_data_path(relative: str):
    assert top(excerpt(relative)) != "startup#data-path"


def test_a_batch_size_assert_is_not_divisibility():
    # Nemo-RL's own assert line (tune-2 case) names a batch: the batch-size node's
    text = excerpt("startup/batch_size_dpo_data_dict_not_multiple_microbatch_nemo_rl_355.log")
    assert top(text) == "startup#batch-size"


def test_sequence_numbers_far_apart_are_not_compared():
    # rank 0 at #1516 (LlamaFactory #2902) and rank 1 at #10792 (YOLOv8 #2023): counters that
    # far apart belong to different groups more likely than to one rank far behind
    glued = excerpt("nccl-hang/ranks_disagree_seqnum_allreduce_llamafactory_2902.log")
    line0 = next(ln for ln in glued.splitlines() if "SeqNum=1516" in ln)
    line1 = next(ln for ln in excerpt("nccl-hang/broadcast_timeout_rank0_missing_yolov8_ul2023.log")
                 .splitlines() if "SeqNum=10792" in ln)
    rc = RankCompare()
    rc.feed(line0.split("[rank1]:")[0], 0, ("a", 1))
    rc.feed(line1, 1, ("b", 1))
    assert {st.seq for st in rc.states.values()} == {1516, 10792}
    assert all(v.kind != "behind" for v in rc.verdicts({0, 1}))
