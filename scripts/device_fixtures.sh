#!/usr/bin/env bash
# Record real outputs of the GPU tools on a machine with a GPU, as probe and triage fixtures, and
# run trainmedic's non-UI commands against that GPU. Needs python3 with PyYAML, networkx, Rich and
# PyTorch (CUDA, NCCL); writes into $OUT (default ./device-out). Each file's first line says where
# it came from, as the fixtures do.
set -u
OUT=${OUT:-device-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
stamp="$(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
rec() {  # rec FILE CMD...: the command's stdout and stderr under a source line
  local file=$1; shift
  { echo "# source: real output of '$*' on $stamp (trainmedic scripts/device_fixtures.sh)"; \
    timeout 60 "$@" 2>&1; echo "# exit status: $?"; } > "$OUT/$file"
}
rec nvidia_smi_q_h200.txt nvidia-smi -q
q=$(python3 -c 'from trainmedic.probes.gpu import query_argv, THROTTLE_FIELDS; print(" ".join(query_argv(THROTTLE_FIELDS[1])[1:]))')
rec query_gpu_h200.csv nvidia-smi $q
rec topo_m_h200.txt nvidia-smi topo -m
cat > /tmp/nccl1.py <<'PY'
import os, torch, torch.distributed as dist
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29511", RANK="0", WORLD_SIZE="1")
torch.cuda.set_device(0)
dist.init_process_group("nccl")
t = torch.ones(1 << 20, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
print("all_reduce ok", t[0].item(), "torch", torch.__version__, "nccl", torch.cuda.nccl.version())
dist.destroy_process_group()
PY
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,NET rec nccl_debug_info_1gpu.txt python3 /tmp/nccl1.py
cat > /tmp/oom.py <<'PY'
import torch
keep = torch.empty(100 * 2**30, dtype=torch.uint8, device="cuda")  # 100 GiB held
torch.empty(80 * 2**30, dtype=torch.uint8, device="cuda")  # 80 GiB more: out of memory
PY
rec cuda_oom_h200.log python3 /tmp/oom.py
cat > /tmp/dup.py <<'PY'
import torch, torch.distributed as dist
torch.cuda.set_device(0)  # every rank on GPU 0: NCCL refuses two ranks on one device
dist.init_process_group("nccl")
t = torch.ones(8, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
PY
rec torchrun_two_ranks_one_gpu.log python3 -m torch.distributed.run --nproc-per-node 2 /tmp/dup.py
sed 1d "$OUT/cuda_oom_h200.log" > /tmp/oom_body.log
python3 -m trainmedic triage /tmp/oom_body.log --json > "$OUT/triage_oom.json" 2>&1
echo "triage exit $?"
python3 -m trainmedic probe --json > "$OUT/probe_all.json" 2>&1
echo "probe exit $?"
python3 -m trainmedic probe 2>&1 | head -60
head -c 3000 "$OUT/triage_oom.json"; echo
ls -la "$OUT"
