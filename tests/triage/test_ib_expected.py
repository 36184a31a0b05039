"""InfiniBand asked for but not found: NCCL's INFO lines over the whole log. The lines follow
NCCL's own INFO templates (init.cc/net_ib.cc), the hosts and addresses are planted."""

from __future__ import annotations

from trainmedic.triage import triage_text

HCA = "node1:100:100 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0:1,mlx5_1:1"
NO_DEVICE = "node1:100:200 [0] NCCL INFO NET/IB : No device found."
SOCKET = ["node1:100:200 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
          "node1:100:200 [0] NCCL INFO Using network Socket"]
IB = "node2:300:400 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.2<0>"


def test_hca_list_but_no_device_is_infiniband():
    report = triage_text("\n".join([HCA, NO_DEVICE, *SOCKET]))
    assert report.findings[0].link == "multi-node#infiniband"
    assert report.findings[0].signature == "ib-expected-missing"


def test_no_device_on_a_workstation_is_quiet():
    assert triage_text("\n".join([NO_DEVICE, *SOCKET])).findings == []


def test_another_rank_using_ib_is_not_this_finding():
    links = [f.signature for f in triage_text("\n".join([HCA, NO_DEVICE, *SOCKET, IB])).findings]
    assert "ib-expected-missing" not in links
