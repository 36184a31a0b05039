"""`trainmedic memory` and `trainmedic preflight` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic.cli import main
from trainmedic.memory.model import MIB

FIX = Path(__file__).parent.parent / "fixtures" / "memory"
# seed 000 §11.1, exactly as written (one flag per token, --bf16 and all)
SEED = """--num-layers 80 --hidden-size 8192 --num-attention-heads 64 \
--num-query-groups 8 --kv-channels 128 --ffn-hidden-size 28672 \
--seq-length 8192 --max-position-embeddings 8192 \
--micro-batch-size 1 --global-batch-size 1024 \
--tensor-model-parallel-size 8 \
--pipeline-model-parallel-size 4 \
--bf16 \
--use-distributed-optimizer""".replace("\\\n", " ").split()


@pytest.fixture(autouse=True)
def _no_world_size(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_seed_example_json_carries_megatrons_three_numbers(capsys):
    rc, out, _ = cli(capsys, "memory", *SEED, "--json", "--no-probe")
    assert rc == 1  # it does not fit: exit 1, as preflight fails its memory item
    data = json.loads(out)
    # hand-worked in test_megatron_formulas.test_seed_example_hand_numbers
    weights = 1_898_582_016 * 18
    act = (8192 * 8192 * 13 * 80 + 8 * 8192 * 4 + 8192 * 8192 * 4) * 1.05
    assert data["weight_and_optimizer_mib"] == pytest.approx(weights / MIB)
    assert data["activation_mib"] == pytest.approx(act / MIB)
    assert data["total_mib"] == pytest.approx((weights + act) / MIB)
    assert data["verdict"] == "does not fit" and data["capacity_mib"] == 80 * 1024
    assert data["extended"]["most_loaded_stage"] == 0 and len(data["stages"]) == 4
    assert data["suggestions"] and data["inputs"]["derived"]["num_query_groups"] == 64
    assert data["inputs"]["max_position_embeddings"] == 8192  # read: learned positions
    assert data["ignored_args"] == data["not_modelled_args"] == []
    assert any("80 GiB" in n for n in data["notes"])
    assert {c["name"] for c in data["checks"]} >= {"heads-divisible-by-tp", "world-size"}


def test_human_output_verdict_first(capsys):
    rc, out, err = cli(capsys, "memory", *SEED, "--no-probe", "--gpu-memory", "80GiB")
    assert rc == 1 and err == ""
    first = out.splitlines()[0]
    assert first.startswith("DOES NOT FIT: pipeline stage 0 needs")
    assert "Megatron theoretical memory" in out and "Cheapest changes that fit" in out
    rc, out, _ = cli(capsys, "memory", *SEED, "--gpu-memory", "400GiB")
    assert out.startswith("FITS:") and rc == 0


def test_capacity_from_the_gpu_probe(capsys, monkeypatch):
    import trainmedic.probes.capacity as capacity

    monkeypatch.setattr(capacity, "smallest_card_mib", lambda: 143771.0)
    _, out, _ = cli(capsys, "memory", *SEED, "--json")
    data = json.loads(out)
    assert data["capacity_mib"] == 143771.0 and "gpu probe" in data["capacity_source"]


def test_probe_failure_falls_back_to_80_gib(monkeypatch):
    import trainmedic.probes.runner as runner
    from trainmedic.probes.capacity import smallest_card_mib

    def boom(*_a, **_k):
        raise RuntimeError("probe exploded")

    monkeypatch.setattr(runner, "run_probes", boom)
    assert smallest_card_mib() is None


def test_world_size_from_environment(capsys, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "64")
    _, out, _ = cli(capsys, "memory", *SEED, "--json", "--no-probe")
    data = json.loads(out)
    assert data["inputs"]["derived"]["data_parallel_size"] == 2
    assert any("WORLD_SIZE" in n for n in data["notes"])


def test_usage_errors_exit_2(capsys):
    rc, _, err = cli(capsys, "memory", "--num-layers", "2", "--hidden-size", "8")
    assert rc == 2 and "missing required argument(s): --num-attention-heads, --seq-length" in err
    rc, _, err = cli(capsys, "memory", *SEED, "--gpu-memory", "huge")
    assert rc == 2 and "--gpu-memory" in err
    rc, _, err = cli(capsys, "memory", *SEED, "-x")
    assert rc == 2 and "unrecognised option '-x'" in err


def test_preflight_fails_on_a_broken_layout(capsys):
    rc, out, _ = cli(capsys, "preflight", "--script", str(FIX / "megatron_gpt3_175b.sh"),
                     "--json", "--no-probe")
    assert rc == 1
    data = json.loads(out)
    assert data["ok"] is False
    by_name = {c["name"]: c for c in data["checks"]}
    assert by_name["world-size"]["status"] == "fail"
    assert by_name["memory"]["status"] in ("pass", "warn", "fail")
    assert data["training_command"]["script"] == "examples/classes/pretrain_gpt.py"


def test_preflight_passes_the_seed_skeleton_and_reports_env(capsys, monkeypatch):
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING", raising=False)
    rc, out, _ = cli(capsys, "preflight", "--script", str(FIX / "seed003_skeleton.sh"),
                     "--no-probe", "--gpu-memory", "80GiB")
    assert rc == 0
    assert out.startswith("preflight: 0 failed")
    assert "PASS memory: FITS" in out


def test_preflight_env_uses_the_scripts_exports(capsys, monkeypatch):
    monkeypatch.delenv("NCCL_TIMEOUT", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    rc, out, _ = cli(capsys, "preflight", "--script",
                     str(FIX / "synthetic_comments_between_continuations.sh"), "--json",
                     "--no-probe", "--gpu-memory", "80GiB")
    data = json.loads(out)
    by_name = {c["name"]: c for c in data["checks"]}
    assert "environment" not in by_name  # the env probe examined the script's exports
    assert by_name["env-no-effect-vars"]["status"] == "warn"  # export NCCL_TIMEOUT=3600
    assert "NCCL_TIMEOUT" in by_name["env-no-effect-vars"]["message"]
    assert by_name["env-max-connections"]["status"] == "pass"  # exported in the script
    assert rc == 0


def test_preflight_direct_arguments_and_fail_exit(capsys):
    rc, out, _ = cli(capsys, "preflight", "--num-layers", "30", "--hidden-size", "1024",
                     "--num-attention-heads", "16", "--seq-length", "2048",
                     "--pipeline-model-parallel-size", "4", "--no-probe")
    assert rc == 1
    assert "FAIL layers-divisible-by-pp" in out


def test_memory_never_imports_textual():
    code = (
        "import sys; from trainmedic.cli import main; "
        f"rc = main(['memory', *{SEED!r}, '--json', '--no-probe']); "
        "assert rc == 1; assert 'textual' not in sys.modules; assert 'rich' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_memory_json_imports_only_the_model():
    # the calculator starts in about a bare Python start plus 50 ms (benchmarks/memory_speed.py):
    # no YAML, no trees, no launch-script reader without --script, no child processes
    code = (
        "import sys; from trainmedic.cli import main; "
        f"main(['memory', *{SEED!r}, '--json', '--no-probe']); print(' '.join(sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    loaded = set(done.stdout.split())
    assert "trainmedic.memory.model" in loaded, done.stderr[-500:]
    unwanted = {"yaml", "rich", "textual", "subprocess", "trainmedic.trees", "trainmedic.probes",
                "trainmedic.launch.shell", "trainmedic.launch.script", "trainmedic.triage"}
    assert not loaded & unwanted


def test_preflight_redacts_credentials_in_the_launcher(tmp_path, capsys):
    script = tmp_path / "launch.sh"
    script.write_text(
        "# synthesised\ntorchrun --rdzv-endpoint=https://user:hunter2secret@etcd:2379 "
        "--nproc-per-node 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
        "--num-attention-heads 4 --seq-length 128\n"
    )
    main(["preflight", "--script", str(script), "--json", "--no-probe"])
    out = capsys.readouterr().out
    assert "hunter2secret" not in out
    assert json.loads(out)["training_command"]["launcher"][0] == "torchrun"
