"""General rules from the tune-8 round on the infrastructure trees (startup, containers,
multi-node): a JIT-built extension's .so that is missing, Megatron's failed build of its
dataset helpers, the OFI plugin's failed memory registration, and NCCL's IB async-event thread
that is no verbs set-up failure.

Each rule is checked on a real tune case (tests/corpus, source URL on its first line) and on a
real line it must leave alone.
"""

from __future__ import annotations

from .routed import links, top
from .test_never_silent import excerpt  # a tune case's excerpt (tune cases only)

# -- startup ---------------------------------------------------------------------------------


def test_missing_so_under_torch_extensions_is_the_jit_build():
    text = excerpt("startup/cpu_adam_so_missing_jit_build_autopoison_6.log")
    assert top(text) == "startup#extension-build"
    # a system CUDA library that cannot be opened stays the loader's question
    line = ("Could not load library libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open "
            "shared object file: No such file or directory")
    assert top(line) == "startup#missing-shared-library"


def test_megatron_dataset_helpers_build_failure_is_fused_kernels():
    text = excerpt("startup/failed_to_compile_dataset_helpers_galvatron_12.log")
    assert top(text) == "startup#fused-kernels"
    # the older Megatron's wording of the same failure (megatron/data/dataset_utils.py)
    assert top("Making C++ dataset helpers module failed, exiting.") == "startup#fused-kernels"
    # the build announcing itself is no failure
    assert links("Compiling the C++ dataset helper functions...") == []


# -- containers ------------------------------------------------------------------------------


def test_ofi_memory_registration_failure_is_the_ofi_plugin():
    text = excerpt("containers/ofi_unable_to_register_memory_all_to_all_64_ranks_nccl_563.log")
    assert top(text) == "containers#ofi-net-plugin"
    # the plugin's notices at init are nothing
    line = ("10.3.35.83: INFO: Function: ofi_init Line: 1102: NET/OFI Setting RDMAV_FORK_SAFE "
            "environment variable to 1.")
    assert links(line) == []


# -- multi-node ------------------------------------------------------------------------------


def test_async_event_thread_failure_is_no_verbs_setup_failure():
    text = excerpt(
        "nccl-hang/silent_hang_first_validation_ibv_get_async_event_megatron_bridge_1477.log")
    assert "multi-node#infiniband" not in links(text)
    # a verbs call of the set-up still is (the signature's own example line)
    line = "spark01:2683:2826 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed"
    assert top(line) == "multi-node#infiniband"
