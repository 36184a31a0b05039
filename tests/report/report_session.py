"""A realistic saved walk over the docs examples, full of realistic-looking secrets.

The secrets are synthesised (made-up values in the shapes real ones have); none is a real
credential. The triage evidence lines are synthesised too, modelled on PyTorch's
ProcessGroupNCCL watchdog message.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"

SECRETS = {
    "hf": "hf_QxVbTnR4kLmP9sW2yZaC7dEfGhJk3MnB",
    "wandb": "a3f9c2e81b7d4c6f90e2a1b3c5d7e9f1a2b4c6d8",
    "aws_id": "AKIAQ3EGXYZ7PLMN4RST",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9Kx2LmNo",
    "rdzv_password": "s3cr3t-Rdzv-Pass",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyYW5rMCJ9.c2lnbmF0dXJlLXZhbHVl",
    "gh": "ghp_Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0GfEdCbAa",
    "flag_key": "k9J2m4N6p8Q1r3S5t7V9",
}

LAUNCH = (
    f"HF_TOKEN={SECRETS['hf']} WANDB_API_KEY={SECRETS['wandb']} NCCL_DEBUG=INFO \\\n"
    "torchrun --nnodes 4 --nproc-per-node 8 --rdzv-backend etcd \\\n"
    f"  --rdzv-endpoint https://trainer:{SECRETS['rdzv_password']}@etcd.internal:2379 \\\n"
    "  pretrain_gpt.py --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 \\\n"
    f"  --save /lustre/ckpt --wandb-api-key {SECRETS['flag_key']} --tokenizer-type GPT2BPETokenizer"
)


def session_dict() -> dict:
    return {
        "version": 1, "id": "20261129T081600-disk-full-3f2a", "tree": "disk-full",
        "started": "2026-11-29T08:16:00Z", "updated": "2026-11-29T08:21:30Z",
        "current": "example-hang#all-stopped", "finished": True,
        "steps": [
            {"node": "disk-full#what-error",
             "question": "What does the log say when the save fails?",
             "answer": 2, "answer_text": "Something else, or the job froze during the save",
             "goto": "disk-full#other-tree-link", "suggested": None, "evidence": [],
             "time": "2026-11-29T08:17:00Z"},
            {"node": "disk-full#other-tree-link", "question": "Did every rank stop, or only some?",
             "answer": 0, "answer_text": "Only some ranks stopped; the others wait",
             "goto": "example-hang#barrier", "suggested": None, "evidence": [],
             "time": "2026-11-29T08:18:00Z"},
            {"node": "example-hang#barrier",
             "question": "Does the save path call a collective on every rank?",
             "answer": 1, "answer_text": "Yes", "goto": "example-hang#all-stopped",
             "suggested": 0,
             "evidence": ['env.nccl_debug = INFO (== INFO)',
                          f"token used for the hub: {SECRETS['hf']}"],
             "time": "2026-11-29T08:19:00Z"},
        ],
        "stack": ["disk-full#other-tree-link"],
        "probes": [
            {"name": "versions", "status": "ok", "summary": "torch 2.4.0+cu124, NCCL 2.21.5",
             "facts": {"python": "3.11.9", "torch": "2.4.0+cu124", "torch_cuda": "12.4",
                       "nccl": "2.21.5", "transformer_engine": "1.9.0", "flash_attn": "",
                       "apex": "", "megatron_core": "0.8.0", "deepspeed": ""},
             "evidence": {}, "duration_s": 0.8, "raw": ""},
            {"name": "env", "status": "warn", "summary": "1 variable that no library reads",
             "facts": {"myth_vars": ["NCCL_TIMEOUT"], "myth_count": 1, "nccl_debug": "INFO",
                       "launch_blocking": False, "HF_TOKEN": SECRETS["hf"]},
             "evidence": {"myth_vars": "NCCL_TIMEOUT=1800 is read by no library"},
             "duration_s": 0.01,
             "raw": (f"NCCL_DEBUG=INFO\nNCCL_TIMEOUT=1800\nAWS_ACCESS_KEY_ID={SECRETS['aws_id']}\n"
                     f"AWS_SECRET_ACCESS_KEY={SECRETS['aws_secret']}\n"
                     f"GITHUB_TOKEN={SECRETS['gh']}\n"
                     f"PIP_INDEX_URL=https://build:{SECRETS['rdzv_password']}@pypi.corp/simple\n")},
        ],
        "triage": {
            "findings": [{
                "signature": "nccl-watchdog-timeout", "tree": "example-hang", "node": "barrier",
                "link": "example-hang#barrier", "confidence": 0.9,
                "summary": "NCCL watchdog timed out on ALLREDUCE", "kind": "cause", "why": "",
                "count": 2, "ranks": [3, 7], "first_time": None,
                "evidence": [
                    {"file": "logs/rank3.log", "line": 1042, "rank": 3,
                     "text": "[rank3]:[E ProcessGroupNCCL.cpp:616] Watchdog caught collective "
                             "operation timeout: WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, "
                             "Timeout(ms)=600000) ran for 600009 milliseconds before timing out."},
                    {"file": "logs/rank0.log", "line": 12, "rank": 0,
                     "text": f"requests.get(url, headers={{'Authorization': 'Bearer "
                             f"{SECRETS['bearer']}'}})"},
                ],
                "details": {}}],
            "loss": {}, "ranks": {}, "files": ["logs/rank0.log", "logs/rank3.log"],
            "candidate_lines": 40, "next": "trainmedic walk example-hang#barrier",
        },
        "launch_command": LAUNCH,
        "notes": f"tried again with GH token {SECRETS['gh']}; same hang",
    }
