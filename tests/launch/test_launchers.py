"""Launch scripts that are not Megatron (issue 21): the launcher, its world size, DeepSpeed batch
arithmetic and the environment checks, on real scripts from public repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainmedic.cli import main
from trainmedic.launch.checks import batch_arithmetic, environment_checks
from trainmedic.launch.launcher import describe_launch, sbatch_options, slurm_environment
from trainmedic.launch.script import read_script, training_command

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "launch"


def placed(tmp_path: Path, *names: str) -> Path:
    """Fixtures laid out as in their repository, each without its first (source) line."""
    for name in names:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((FIX / name).read_text().split("\n", 1)[1])
    return tmp_path


def preflight(capsys, monkeypatch, script: Path, cwd: Path | None = None) -> tuple[int, dict]:
    monkeypatch.delenv("NCCL_SOCKET_IFNAME", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    rc = main(["preflight", "--script", str(script), "--json", "--no-probe"])
    data = json.loads(capsys.readouterr().out)
    return rc, data


def checks(data: dict) -> dict[str, dict]:
    return {c["name"]: c for c in data["checks"]}


# -- the launcher and its world size --------------------------------------------------------

@pytest.mark.parametrize("name, launchers, world, nnodes", [
    ("torchrun_srun_sbatch_run.sh", ["srun", "torchrun"], 4, 4),
    ("accelerate_submit_multinode.sh", ["srun", "accelerate"], 16, 4),
    ("mpirun_horovod_mnasnet_train.sh", ["mpirun"], 8, None),
    ("hf_trainer_torchrun_fastchat_vicuna_7b.sh", ["torchrun"], 16, None),
    ("hf_deepspeed/scripts/zero2-small.sh", ["deepspeed"], 2, 1),
    ("lightning_minimal_multi_node_demo_script.sh", ["python"], 1, 1),
    ("deepspeed_native/cmd_demos.sh", ["deepspeed"], None, None),
])
def test_launcher_and_world_size_of_real_scripts(name, launchers, world, nnodes):
    path = FIX / name
    cmd = training_command(read_script(str(path)), path=name, launcher_only=True)
    launch = cmd.launch
    assert launch.names == launchers and launch.world_size == world
    assert launch.nnodes == nnodes


def test_sbatch_options_seed_the_slurm_variables_a_script_reads():
    text = read_script(str(FIX / "accelerate_submit_multinode.sh"))
    options = sbatch_options(text)
    assert options["nodes"] == "4" and options["ntasks-per-node"] == "1"
    env = slurm_environment(options)
    assert env["SLURM_NNODES"] == "4" and env["SLURM_GPUS_ON_NODE"] == "4"
    assert env["SLURM_NTASKS"] == "4"


def test_launcher_options_as_each_launcher_documents_them():
    assert describe_launch(["srun", "-N", "2", "--ntasks-per-node=8", "python"]).world_size == 16
    assert describe_launch(["python", "-m", "torch.distributed.run", "--nnodes=1:4",
                            "--nproc-per-node=8"]).world_size == 32  # elastic: the maximum
    assert describe_launch(["torchrun", "--nproc_per_node", "gpu"]).world_size is None
    assert describe_launch(["deepspeed", "--num_nodes", "2", "--num_gpus", "8"]).world_size == 16
    assert describe_launch(["deepspeed", "--include", "n1:0,1,2,3@n2:0,1"]).world_size == 6
    assert describe_launch(["accelerate", "launch", "--num_processes", "8"]).world_size == 8
    assert describe_launch(["mpirun", "-np", "4", "python"]).world_size == 4
    assert describe_launch(["srun", "-n", "2", "torchrun", "--nnodes", "2",
                            "--nproc_per_node", "8"]).world_size == 16  # the innermost counts


# -- DeepSpeed batch arithmetic, as DeepSpeed derives and asserts it --------------------------

def test_batch_arithmetic_follows_deepspeed():
    launch = describe_launch(["deepspeed", "--num_gpus", "8"])
    ok = batch_arithmetic({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4,
                           "gradient_accumulation_steps": 2}, "ds.json", [], launch)
    assert ok.status == "pass" and "64 = 4 x 2 x 8" in ok.message
    bad = batch_arithmetic({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 4,
                            "gradient_accumulation_steps": 8}, "ds.json", [], launch)
    assert bad.status == "fail" and "train_batch_size 16 != micro 4 x grad-accum 8" in bad.message
    # two given: DeepSpeed derives the third with integer division, then asserts
    derived = batch_arithmetic({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 4},
                               "ds.json", [], launch)
    assert derived.status == "fail" and "grad-accum 3" in derived.message
    none = batch_arithmetic({"gradient_accumulation_steps": 2}, "ds.json", [], launch)
    assert none.status == "fail" and "neither train_batch_size" in none.message


def test_auto_values_are_filled_from_the_hf_arguments():
    launch = describe_launch(["torchrun", "--nproc_per_node", "4"])
    auto = {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
            "gradient_accumulation_steps": "auto"}
    given = batch_arithmetic(auto, "z.json", ["--per_device_train_batch_size", "2",
                                              "--gradient_accumulation_steps", "16"], launch)
    assert given.status == "pass" and "128 = 2 x 16 x 4" in given.message
    defaults = batch_arithmetic(auto, "z.json", [], launch)
    assert "32 = 8 x 1 x 4" in defaults.message and "HF default 8" in defaults.message
    unknown = batch_arithmetic(auto, "z.json", [], describe_launch(["deepspeed"]))
    assert unknown.status == "skip" and "world size is unknown" in unknown.message


# -- preflight, end to end, never exit 2 on these scripts ------------------------------------

def test_hf_trainer_deepspeed_script_with_its_config_beside_the_repo(capsys, monkeypatch,
                                                                      tmp_path):
    root = placed(tmp_path, "hf_deepspeed/scripts/zero2-small.sh",
                  "hf_deepspeed/deepspeed/zero2.json") / "hf_deepspeed"
    rc, data = preflight(capsys, monkeypatch, root / "scripts" / "zero2-small.sh")
    found = checks(data)
    assert rc == 0 and found["megatron"]["status"] == "skip"
    assert "need Megatron's model arguments" in found["megatron"]["message"]
    assert found["deepspeed-batch"]["status"] == "pass"
    # --per_device_train_batch_size 64, HF's default accumulation 1, 2 GPUs from --include
    assert "train_batch_size 128 = 64 x 1 x 2" in found["deepspeed-batch"]["message"]
    assert data["memory"] is None and data["training_command"]["world_size"] == 2
    assert found["env-max-connections"]["status"] == "skip"


def test_deepspeed_native_config_next_to_the_script(capsys, monkeypatch, tmp_path):
    folder = placed(tmp_path, "deepspeed_native/cmd_demos.sh", "deepspeed_native/ds_config.json")
    rc, data = preflight(capsys, monkeypatch, folder / "deepspeed_native" / "cmd_demos.sh",
                         cwd=tmp_path)  # run from elsewhere: the config is beside the script
    found = checks(data)
    assert rc == 0
    assert data["training_command"]["script"] == "ds_train.py"
    assert found["launcher"]["status"] == "warn" and "hostfile" in found["launcher"]["message"]
    assert found["deepspeed-batch"]["status"] == "skip"  # world size is in the hostfile


def test_a_launcher_line_without_a_program_fails(capsys, monkeypatch):
    # $PYTHON_FILE and $ARGS are never set: `srun accelerate launch ...` starts nothing
    rc, data = preflight(capsys, monkeypatch, FIX / "accelerate_submit_multinode.sh")
    found = checks(data)
    assert rc == 1 and found["launcher-program"]["status"] == "fail"
    assert found["launcher"]["status"] == "pass" and "16 process(es)" in \
        found["launcher"]["message"]


def test_one_python_process_where_slurm_was_asked_for_sixteen(capsys, monkeypatch):
    rc, data = preflight(capsys, monkeypatch, FIX / "lightning_minimal_multi_node_demo_script.sh")
    assert rc == 0
    warned = checks(data)["launcher-starts-one"]
    assert warned["status"] == "warn" and "asks Slurm for 16 tasks" in warned["message"]


def test_mpirun_exports_reach_the_environment_checks(capsys, monkeypatch):
    rc, data = preflight(capsys, monkeypatch, FIX / "mpirun_horovod_mnasnet_train.sh")
    found = checks(data)
    assert rc == 0 and found["launcher"]["status"] == "pass"
    assert found["env-socket-ifname"]["message"].startswith(("NCCL_SOCKET_IFNAME is set",
                                                             "NCCL_SOCKET_IFNAME selects no"))


@pytest.mark.parametrize("name", ["torchrun_srun_sbatch_run.sh",
                                  "hf_trainer_torchrun_fastchat_vicuna_7b.sh"])
def test_torchrun_scripts_get_every_environment_check(capsys, monkeypatch, name):
    monkeypatch.setenv("NCCL_ALGO", "Ring")
    rc, data = preflight(capsys, monkeypatch, FIX / name)
    found = checks(data)
    assert rc == 0
    assert found["env-nccl-forced"]["status"] == "warn"
    assert "NCCL_ALGO=Ring" in found["env-nccl-forced"]["message"]
    assert {"env-no-effect-vars", "env-launch-blocking", "env-async-error-handling",
            "env-socket-ifname"} <= set(found)


def test_memory_on_a_non_megatron_script_says_what_it_needs(capsys):
    rc = main(["memory", "--script", str(FIX / "hf_trainer_torchrun_fastchat_vicuna_7b.sh"),
               "--no-probe"])
    err = capsys.readouterr().err
    assert rc == 2 and "without Megatron model arguments" in err and "preflight" in err


# -- the environment checks, on facts ---------------------------------------------------------

def test_socket_ifname_on_a_multi_nic_node_of_a_multi_node_job():
    facts = {"socket_ifname_set": False, "interfaces": ["eth0", "ib0", "docker0"]}
    multi = {c.name: c for c in environment_checks(facts, "shell", nnodes=2)}
    assert multi["env-socket-ifname"].status == "warn"
    assert "eth0, ib0" in multi["env-socket-ifname"].message  # docker0: NCCL skips it
    one = {c.name: c for c in environment_checks(facts, "shell", nnodes=1)}
    assert one["env-socket-ifname"].status == "pass"
    single_nic = {"socket_ifname_set": False, "interfaces": ["eth0", "docker0"]}
    assert {c.name: c for c in environment_checks(single_nic, "shell", nnodes=4)}[
        "env-socket-ifname"].status == "pass"
    megatron = {c.name: c for c in environment_checks({"max_connections_one": False}, "shell",
                                                     megatron_overlap=True)}
    assert megatron["env-max-connections"].status == "warn"


def test_fixtures_say_where_they_come_from():
    for path in FIX.rglob("*"):
        if path.is_file():
            assert path.read_text().startswith("# source: https://github.com/"), path
