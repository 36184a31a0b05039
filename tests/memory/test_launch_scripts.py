"""Reading real launch scripts (fixtures carry their source on line 1) and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainmedic.cli import main
from trainmedic.errors import UsageError
from trainmedic.memory import config_from_script, require
from trainmedic.memory.from_script import script_config_and_command

FIX = Path(__file__).parent.parent / "fixtures" / "memory"


def load(name: str):
    text = (FIX / name).read_text()
    assert text.startswith("# source:") or text.startswith("# synthesised")
    return script_config_and_command(text, path=name)


def test_gpt3_175b_arrays_and_unquoted_array_expansion():
    cfg, cmd = load("megatron_gpt3_175b.sh")
    assert cmd.script == "examples/classes/pretrain_gpt.py"
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_attention_heads) == (96, 12288, 96)
    assert (cfg.seq_length, cfg.micro_batch_size, cfg.global_batch_size) == (2048, 1, 1536)
    assert (cfg.tp, cfg.pp) == (8, 16)
    assert cfg.fp16 and not cfg.bf16
    assert cfg.world_size == 8  # --nproc_per_node $GPUS_PER_NODE x --nnodes $NUM_NODES
    assert "CUDA_DEVICE_MAX_CONNECTIONS" in cmd.exported
    assert cfg.attention_backend == "auto"  # a comment follows it in the array
    assert "--init-method-std" in cfg.ignored_args


def test_llama3_8b_fp8_conditional_array_appends():
    cfg, _cmd = load("megatron_llama3_8b_h100_fp8.sh")
    assert (cfg.num_layers, cfg.hidden_size, cfg.ffn_hidden_size) == (32, 4096, 14336)
    assert cfg.group_query_attention and cfg.num_query_groups == 8 and cfg.kv_channels == 128
    assert cfg.swiglu and cfg.untie_embeddings_and_output_weights and not cfg.add_bias_linear
    assert cfg.seq_length == 8192 and cfg.global_batch_size == 128
    # DTYPE_ARGS+=( "--fp8-format hybrid" ... ) inside `if [[ "$DTYPE" == "fp8" ]]`
    assert cfg.fp8 == "hybrid" and cfg.fp8_param_gather
    # TRAINING_ARGS+=("${DDP_ARGS[@]}")
    assert cfg.use_distributed_optimizer
    # MOCK branch taken (${3:-"MOCK"}), so the vocabulary is the NullTokenizer's
    assert cfg.vocab_size == 128256 and cfg.tokenizer_type == "NullTokenizer"
    assert cfg.world_size == 8 and cfg.data_parallel_size == 8
    assert cfg.sequence_parallel and cfg.tp == 1  # silently off in Megatron
    # Llama 3 8B has 8,030,261,248 parameters (its model card). On top, here: Megatron's
    # NullTokenizer adds an EOD id (128257, padded to 128384 = 128 more rows in each of the two
    # untied tables), and the script keeps Megatron's default LayerNorm (no --normalization
    # RMSNorm): one bias of h per norm, 2 per layer + the final norm.
    from trainmedic.memory.model import count_parameters

    assert cfg.normalization == "LayerNorm" and cfg.padded_vocab_size == 128384
    assert count_parameters(cfg).total == 8_030_261_248 + (2 * 32 + 1) * 4096 + 2 * 128 * 4096


def test_amd_llama2_eval_of_a_string_command_and_if_elif_chain():
    cfg, cmd = load("megatron_amd_train_llama2.sh")
    assert cmd.script == "pretrain_gpt.py"
    # MODEL_SIZE defaults to 70 -> the elif branch; NUM_GROUPS = 64 / (64 / 8)
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_attention_heads) == (80, 8192, 64)
    assert cfg.group_query_attention and cfg.num_query_groups == 8
    assert cfg.ffn_hidden_size == 28672 and cfg.normalization == "RMSNorm"
    assert cfg.tp == 8 and cfg.pp == 1 and cfg.cp == 1 and cfg.global_batch_size == 8
    assert cfg.sequence_parallel and cfg.use_distributed_optimizer
    assert cfg.recompute_granularity is None  # RECOMPUTE defaults to 0
    # GPUS_PER_NODE comes from `python3 -c ...`: the world size stays unknown
    assert cfg.world_size is None
    assert any("--nproc_per_node" in w for w in cmd.launcher)


def test_seed_003_skeleton():
    cfg, cmd = load("seed003_skeleton.sh")
    assert cmd.launcher[0] == "torchrun"
    assert (cfg.tp, cfg.pp, cfg.world_size) == (4, 2, 8)
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_attention_heads) == (32, 4096, 32)
    assert cfg.data_parallel_size == 1 and cfg.num_microbatches == 8


def test_comments_between_continuation_lines():
    cfg, cmd = load("synthetic_comments_between_continuations.sh")
    assert cfg.num_attention_heads == 32  # the commented-out 30 is not read
    assert cfg.hidden_size == 4096  # `\ # 7B-class` continues the command
    assert cfg.seq_length == 4096 and cfg.vocab_size == 32000
    assert cfg.world_size == 16  # --nnodes=1:${NNODES} (elastic max 2) x --nproc-per-node=8
    assert cfg.recompute_granularity == "selective" and cfg.sequence_parallel
    assert "2>&1" not in cmd.args and cmd.args[-1] == "32000"
    assert cmd.exported["NCCL_TIMEOUT"] == "3600"


def test_no_training_command_is_a_clear_error():
    with pytest.raises(UsageError, match="no training command found"):
        load("no_training_command.sh")


def test_unknown_runtime_value_names_the_flag_and_line():
    text = "N=$(python -c 'print(32)')\ntorchrun pretrain_gpt.py --num-layers $N --hidden-size 8\n"
    with pytest.raises(UsageError, match=r"x\.sh:2: the value of --num-layers is computed"):
        config_from_script(text, path="x.sh")


def test_missing_required_arguments_are_named():
    cfg = config_from_script("python pretrain_gpt.py --num-layers 2 --hidden-size 8\n")
    with pytest.raises(UsageError, match="--num-attention-heads, --seq-length"):
        require(cfg)


def _cli(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "binary file"),
        (b"", "empty script"),
        (b"   \n\n", "empty script"),
        (b"\xff\xfe\xfa not utf8", "not UTF-8"),
        (b"echo 'unterminated\n", "unterminated"),
        (b"#!/bin/bash\necho hello\nls -la\n", "no training command"),
    ],
)
def test_garbage_scripts_exit_2_with_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "launch.sh"
    path.write_bytes(content)
    for command in ("memory", "preflight"):
        rc, out, err = _cli(capsys, command, "--script", str(path), "--no-probe")
        assert rc == 2
        assert message in err and err.count("\n") == 1 and "Traceback" not in err
        assert out == ""


def test_missing_file_and_no_arguments(tmp_path, capsys):
    rc, _out, err = _cli(capsys, "memory", "--script", str(tmp_path / "nope.sh"))
    assert rc == 2 and "cannot read" in err
    rc, _out, err = _cli(capsys, "memory")
    assert rc == 2 and "--script FILE" in err


def test_script_through_cli_json_and_overrides(capsys):
    path = FIX / "seed003_skeleton.sh"
    rc, out, _err = _cli(capsys, "memory", "--script", str(path), "--json", "--no-probe",
                         "--micro-batch-size", "2", "--global-batch-size", "16")
    assert rc == 0
    data = json.loads(out)
    assert data["inputs"]["micro_batch_size"] == 2  # command-line flags override the script
    assert data["inputs"]["derived"]["world_size"] == 8
    assert data["total_mib"] == pytest.approx(data["weight_and_optimizer_mib"]
                                              + data["activation_mib"])


PAI_ARGS = (
    "dsw ../../ 8B 1 8 1e-5 1e-6 128 128 256 bf16 4 2 sel true false true true false 100000 "
    "/mnt/llama3-datasets/wudao none 100000000 10000 /workspace/out"
)


def test_pai_megatron_patch_positional_arguments_and_eval():
    text = (FIX / "pai_megatron_patch_llama3_mcore.sh").read_text()
    cfg, cmd = script_config_and_command(text, argv=PAI_ARGS.split())
    assert cmd.script == "pretrain_llama.py" and cmd.launcher[0] == "torchrun"
    assert (cfg.num_layers, cfg.hidden_size, cfg.ffn_hidden_size) == (32, 4096, 14336)
    assert cfg.group_query_attention and cfg.num_query_groups == 8  # gqa_options when 8B
    assert (cfg.tp, cfg.pp, cfg.micro_batch_size, cfg.global_batch_size) == (4, 2, 1, 8)
    assert cfg.recompute_granularity == "selective" and cfg.sequence_parallel  # AC=sel, SP
    assert cfg.bf16 and cfg.use_distributed_optimizer and cfg.world_size == 8
    assert cfg.effective_vocab_size == 128256  # --patch-tokenizer-type LLama3Tokenizer


def test_pai_script_without_its_arguments_says_what_to_do(capsys):
    rc = main(["memory", "--script", str(FIX / "pai_megatron_patch_llama3_mcore.sh"),
               "--no-probe"])
    err = capsys.readouterr().err
    assert rc == 2 and "needs a value" in err and "--script-args" in err
    rc = main(["memory", "--script", str(FIX / "pai_megatron_patch_llama3_mcore.sh"),
               "--no-probe", "--json", "--script-args", PAI_ARGS])
    data = json.loads(capsys.readouterr().out)
    # 128256 padded to a multiple of 128 x TP 4 = 128512: 256 extra rows in each of 2 tables
    assert rc == 0 and data["parameters"]["total"] == 8_030_261_248 + 2 * 256 * 4096
