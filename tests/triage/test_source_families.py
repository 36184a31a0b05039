"""Message families read from the upstream sources (NCCL's WARNs, gloo's and PyTorch's c10d
errors, CUDA error strings, DeepSpeed's op builder and checkpoint files), each checked on a real
line from a public thread (tests/fixtures/triage, source URL on each file's first line) or on a
tune case of the corpus. The rule is the family's fixed text, not the thread's wording."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainmedic.triage import triage_text

from .conftest import FIXTURES

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
sys.path.insert(0, str(CORPUS))
from corpus import read_case  # noqa: E402


def top(name: str):
    findings = triage_text((FIXTURES / name).read_text(encoding="utf-8")).findings
    assert findings, name
    return findings[0]


@pytest.mark.parametrize(("fixture", "link", "signature"), [
    # gloo's unbound_buffer.cc timeout: the CPU-group counterpart of the NCCL watchdog
    ("gloo_recv_timeout.log", "nccl-hang#watchdog-timeout", "gloo-collective-timeout"),
    # gloo's pair.cc on EOF or a reset: the peer rank went away (ncclRemoteError's counterpart)
    ("gloo_peer_closed.log", "nccl-hang#remote-error", "gloo-peer-closed"),
    ("gloo_read_error_reset.log", "nccl-hang#remote-error", "gloo-peer-closed"),
    # gloo could not connect its pairs: the interface question, not the store
    ("gloo_connect_timeout.log", "multi-node#network-interface", "gloo-connect-failed"),
    # NCCL's transports see a size the local rank did not post: the ranks disagree
    ("nccl_ib_collective_mismatch.log", "nccl-hang#collective-mismatch", "nccl-net-size-mismatch"),
    ("nccl_socket_message_truncated.log", "nccl-hang#collective-mismatch",
     "nccl-net-size-mismatch"),
    # cudaErrorMisalignedAddress: a kernel fault, where the triage tree sends illegal accesses
    ("cuda_misaligned_address.log", "startup#device-assert", "cuda-kernel-fault"),
    # CUDA 803: libcuda and the kernel module disagree; 804: forward compatibility refused
    ("cuda_803_driver_mismatch.log", "hardware#driver-broken", "driver-unreachable"),
    ("cuda_804_forward_compat.log", "startup#driver-too-old", "cuda-forward-compat-unsupported"),
    # DeepSpeed's op builder refuses to compile against another toolkit, or none
    ("deepspeed_cuda_mismatch.log", "startup#extension-build", "extension-toolkit-mismatch"),
    ("deepspeed_missing_cuda_home.log", "startup#extension-build", "extension-toolkit-mismatch"),
    # a per-rank ZeRO optimizer file the loader opens is absent
    ("zero_optim_states_missing.log", "checkpoint#missing-shard-files",
     "per-rank-checkpoint-file-missing"),
    # the Trainer's resume finds no weights file in the directory it was given
    ("hf_trainer_no_valid_checkpoint.log", "checkpoint#missing-shard-files",
     "hf-trainer-no-valid-checkpoint"),
    # cudaErrorPeerAccessUnsupported inside NCCL's P2P transport: the intra-node path
    ("nccl_p2p_peer_access_unsupported.log", "nccl-hang#topology", "p2p-access-unsupported"),
    # init_process_group(env://) without MASTER_ADDR
    ("env_master_addr_unset.log", "multi-node#master-addr", "env-rendezvous-master-unset"),
])
def test_a_family_member_goes_to_its_node(fixture: str, link: str, signature: str) -> None:
    finding = top(fixture)
    assert (finding.link, finding.signature) == (link, signature)
    assert not finding.guess


def test_deepspeeds_accepted_minor_mismatch_is_not_an_error():
    """The same format string's sibling: "... but since the APIs are compatible, accepting this
    combination" is DeepSpeed going on, not a failed build."""
    text = (FIXTURES / "deepspeed_cuda_minor_mismatch_accepted.log").read_text(encoding="utf-8")
    assert triage_text(text).findings == []


def test_rank_not_set_is_not_a_master_address_problem():
    """rendezvous.py names the missing variable: RANK or WORLD_SIZE missing means no launcher set
    them, which the master-address fix does not answer."""
    line = ("ValueError: Error initializing torch.distributed using env:// rendezvous: "
            "environment variable RANK expected, but not set")
    assert all(f.link != "multi-node#master-addr" for f in triage_text(line).findings)


def test_ncclRemoteError_from_the_proxy_service_is_the_remote_error():
    """NVIDIA/nccl#795 (tune case): "[Proxy Service 9] Failed to execute operation Connect from
    rank 9, retcode 6" - 6 is ncclRemoteError; another retcode stays an NCCL error."""
    case = read_case(CORPUS / "cases" / "nccl-hang" / "remote_error_surfaces_as_internal_aws_nccl_"
                     "795.log")
    assert case.split == "tune"
    line = next(x for x in case.excerpt.splitlines() if "Proxy Service" in x)
    finding = triage_text(line).findings[0]
    assert (finding.link, finding.signature) == ("nccl-hang#remote-error", "nccl-proxy-failed")
    other = triage_text(line.replace("retcode 6", "retcode 3")).findings[0]
    assert other.link == "nccl-hang#nccl-error"


@pytest.mark.parametrize("relative", [
    # PyTorch 2.3+: ranks that did not time out print the dump signal (axolotl #3476) ...
    "nccl-hang/fsdp2_dump_signal_collective_timeout_completed_12_enqueued_855_axolotl_3476.log",
    # ... and the watchdog prints "Timeout at NCCL work: N, last enqueued ..." (accelerate #3250)
    "nccl-hang/fsdp_intermediate_save_ranks_at_different_seqnum_accelerate_3250.log",
])
def test_processgroupnccl_timeout_report_lines_are_watchdog_timeouts(relative: str) -> None:
    case = read_case(CORPUS / "cases" / relative)
    assert case.split == "tune"
    lines = [x for x in case.excerpt.splitlines()
             if "Received a dump signal" in x or "Timeout at NCCL work:" in x]
    assert lines
    for line in lines:
        assert "nccl-watchdog-timeout" in {f.signature for f in triage_text(line).findings}
