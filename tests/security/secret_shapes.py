"""The table of secret shapes every output path is tested against, and log text that must stay.

Each shape is (name, text as it would appear, the secret part that must never come out). The
values are made up but have the real shapes (lengths, alphabets, prefixes) of each kind.
"""

from __future__ import annotations

HF = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm0123456789"
WANDB = "8d3c1f0e9b7a6d5c4b3a29f8e7d6c5b4a3928170"
AWS_ID = "AKIAZ7QWERTYUIOPASDF"
AWS_SECRET = "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"
GHP = "ghp_Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
GH_PAT = "github_pat_11ABCDEFG0abcdefghijkl_MnOpQrStUvWxYz0123456789abcdefghijklmnopqrs"
OPENAI = "sk-proj-Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6Kl9No2Qr"
ANTHROPIC = "sk-ant-api03-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty"
SLACK_BOT = "xoxb-2048576123-4096153872-QwErTyUiOpAsDfGhJkLzXcVb"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9."
       "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5")
GLPAT = "glpat-Xy7Zq2Wv9Ut4Sr6Qp1On"
NGC = "nvapi-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op7"
GOOGLE = "AIzaSyD3fG7hJ2kL9mN4pQ8rS1tU6vW0xY5zA2b"
STRIPE = "sk_live_51HqWeRtYuIoPaSdFgHjKlZxCvBnM"
PASSWORD = "Tr0ub4dor&3xQ"
PEM_BODY = ("MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yW\n"
            "R7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3q")
SSH_BODY = ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
            "QyNTUxOQAAACBqXQ0vKpJzD2fY8nWm3hL5sR7tU9vX1yA3bC5dE7fG9gAAAJjQ1rTt0Na0")

# (name, text, secret that must not come out)
SHAPES: list[tuple[str, str, str]] = [
    # secret-named variables, alone and after a label
    ("HF_TOKEN", f"HF_TOKEN={HF}", HF),
    ("HUGGING_FACE_HUB_TOKEN", "HUGGING_FACE_HUB_TOKEN=QwErTyUiOpAsDfGh42", "QwErTyUiOpAsDfGh42"),
    ("WANDB_API_KEY after a label", f"RuntimeError: WANDB_API_KEY={WANDB} is invalid", WANDB),
    ("AWS_SECRET_ACCESS_KEY after env:", f"env: AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    ("AWS_SESSION_TOKEN", "AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEHoaCXVzLWVhc3QtMSJHMEUCIQ",
     "IQoJb3JpZ2lu"),
    ("PASSWORD after Error:", f"Error:PASSWORD={PASSWORD}", PASSWORD),
    ("password: after note:", "note: password: hunter2hunter2", "hunter2hunter2"),
    ("PGPASSWORD", "env: PGPASSWORD=pgPassw0rdVALUE", "pgPassw0rdVALUE"),
    ("MYSQL_PWD", "MYSQL_PWD=myS3cretPwd", "myS3cretPwd"),
    ("MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_PASSWORD=mlfl0wPass", "mlfl0wPass"),
    ("AZURE_CLIENT_SECRET", "AZURE_CLIENT_SECRET=Az~8Q~abcdEFGHijklMNOP", "Az~8Q~abcdEFGHijklMNOP"),
    ("COMET_API_KEY", "COMET_API_KEY: cometKey1234567890", "cometKey1234567890"),
    ("NCCL_IB_SECRET", "NCCL_IB_SECRET=ibSecretValue99", "ibSecretValue99"),
    ("DB_PASS", "DB_PASS=dbPassValue77", "dbPassValue77"),
    ("quoted with spaces", 'export HF_TOKEN="correct horse battery"', "horse battery"),
    ("JSON api_key", '{"api_key": "jsonKeyValue123", "user": "bob"}', "jsonKeyValue123"),
    ("escaped JSON token", r'{\"token\": \"escTokValue88\"}', "escTokValue88"),
    ("YAML password", "  password: yamlPassValue5", "yamlPassValue5"),
    ("srun --export", "srun --export=ALL,WANDB_API_KEY=abcdef0123456789abcdef0123456789abcdef01 "
     "python train.py", "abcdef0123456789abcdef0123456789abcdef01"),
    ("Azure connection string", "DefaultEndpointsProtocol=https;AccountName=acct;"
     "AccountKey=Zm9vYmFyQmF6cXV4UXV1eA==;EndpointSuffix=core.windows.net",
     "Zm9vYmFyQmF6cXV4UXV1eA"),
    ("Azure SAS sig=", "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&"
     "sig=Qm9ndXNTaWduYXR1cmU%3D&se=2030", "Qm9ndXNTaWduYXR1cmU"),
    ("S3 presigned", "https://b.s3.amazonaws.com/k?X-Amz-Signature=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
     "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("query access_token", "GET /api?access_token=qsTokenValue42&x=1", "qsTokenValue42"),
    # credentials in URLs
    ("URL user:pass", "git clone https://alice:pa55wordURL@github.com/o/r.git", "pa55wordURL"),
    ("URL empty user", "MASTER_ADDR=redis://:emptyUserPw9@cache:6379", "emptyUserPw9"),
    ("URL @ in password", "https://bob:pa@ss@word7@host.example/x", "ss@word7"),
    ("hf_ in a git URL", f"https://user:{HF}@huggingface.co/org/model", HF),
    ("postgres URL", "postgresql://svc:pgUrlPass3@db:5432/app", "pgUrlPass3"),
    # headers and tokens in prose
    ("Authorization Bearer", "Authorization: Bearer opaqueBearerTok3n", "opaqueBearerTok3n"),
    ("Authorization Basic", "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
     "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("curl -H header", 'curl -H "Authorization: token ghoTokenValue12345" https://api',
     "ghoTokenValue12345"),
    ("Cookie header", "Cookie: sessionid=cookieSess1on; csrftoken=abc", "cookieSess1on"),
    ("JWT", f"auth ok, jwt={JWT}", JWT),
    ("hf_ in prose", f"loaded token {HF} from cache", HF),
    ("AKIA in prose", f"key id {AWS_ID} rejected", AWS_ID),
    ("GitHub ghp_", f"remote: {GHP}", GHP),
    ("GitHub PAT", f"GH_PAT={GH_PAT}", GH_PAT),
    ("OpenAI sk-proj", f"using {OPENAI}", OPENAI),
    ("Anthropic sk-ant", f"ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC),
    ("Slack bot token", f"SLACK_BOT_TOKEN={SLACK_BOT}", SLACK_BOT),
    ("GitLab glpat", f"token {GLPAT} expired", GLPAT),
    ("NGC nvapi", f"NGC_API_KEY={NGC}", NGC),
    ("Google AIza", f"maps key {GOOGLE} quota", GOOGLE),
    ("Stripe sk_live", f"charge with {STRIPE}", STRIPE),
    ("W&B local key", f"key local-{WANDB}", WANDB),
    ("Slack webhook", "posting to https://hooks.slack.com/services/T0ABCDEF1/B0GHIJKL2/"
     "WebhookSecretPart99", "WebhookSecretPart99"),
    ("Discord webhook", "https://discord.com/api/webhooks/123456789012345678/"
     "discordHookSecret_x9", "discordHookSecret_x9"),
    # flags and commands
    ("--password VALUE", f"deepspeed train.py --password {PASSWORD} --zero 2", PASSWORD),
    ("--password=VALUE", "args: --password=eqPassValue6", "eqPassValue6"),
    ("--hf-token X", "python dl.py --hf-token hfFlagValue55", "hfFlagValue55"),
    ("--wandb-api-key X", f"--wandb-api-key {WANDB}", WANDB),
    ("--token=X", "huggingface-cli login --token=tokFlagVal12", "tokFlagVal12"),
    ("wandb login KEY", f"wandb login {WANDB}", WANDB),
    ("wandb login --relogin KEY", f"wandb login --relogin {WANDB}", WANDB),
    ("curl -u user:pass", "curl -u admin:curlPass77 https://x", "curlPass77"),
    ("sshpass -p", "sshpass -p sshPassVal3 ssh node1", "sshPassVal3"),
    ("netrc one line", "machine api.wandb.ai login user password netrcPassVal1", "netrcPassVal1"),
    ("netrc lines", "machine api.wandb.ai\n  login user\n  password netrcPassVal2\n",
     "netrcPassVal2"),
    # private keys
    ("RSA private key", "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY
     + "\n-----END RSA PRIVATE KEY-----", "u1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t"),
    ("OpenSSH private key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + SSH_BODY
     + "\n-----END OPENSSH PRIVATE KEY-----", "QyNTUxOQAAACBqXQ0vKpJzD2fY8nWm3hL5"),
    ("truncated private key", "-----BEGIN PRIVATE KEY-----\n" + PEM_BODY, "gizskuemMghRniWaoLc"),
    ("JSON private_key", '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0'
     'BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n"}', "BAQEFAASCBKcwggSj"),
    ("key body line alone", PEM_BODY.splitlines()[0], "u1SU1LfVLPHCozMxH2Mo4lgOEePzNm0t"),
]

# Ordinary log text that must come out unchanged: redacting it would hide evidence.
KEEP: list[str] = [
    "NCCL INFO comm 0x55d4c8e2a0b0 rank 0 nranks 8 cudaDev 0 busId 1a000 commId 0x4c8a1f63e1b2a9d7"
    " - Init COMPLETE",
    "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>",
    "torch 2.3.0a0+git6ddf5cf, Megatron-LM commit 5e6b4a3c2d1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d",
    "megatron_core 0.8.0 (git 8d3c1f0e9b7a6d5c4b3a29f8e7d6c5b4a3928170)",
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f1c3a2e-9b8d-4c7e-a6f5-0d1e2c3b4a59)",
    "loading checkpoint from /home/alice/.cache/huggingface/token_cache/ckpt/iter_0001000",
    " iteration     1000/  500000 | consumed samples: 1024000 | consumed tokens: 88899584 |"
    " lm loss: 2.1E+00 | eos_token: </s> | tokens_per_sec=1234",
    "tokenizer_type=GPT2BPETokenizer num_key_value_heads=8 kv_channels=128",
    "moe_token_dispatcher_type=alltoall key_size=64 use_auth_token=True",
    "export HF_TOKEN=$HF_TOKEN; huggingface-cli login --token \"$HF_TOKEN\"",
    "KeyError: 'model.layers.0.self_attn.k_proj.weight'",
    "sha256: 3f786850e387550fdab836ed7e6dc881de23001b  model.safetensors",
    "docker run --gpus all -u 1000:1000 nvcr.io/nvidia/pytorch:24.05-py3",
    "python -u pretrain_gpt.py --tokenizer-type GPT2BPETokenizer --save-interval 1000",
    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "PWD=/home/alice/run OLDPWD=/home/alice",
    "c10::Error at ::TokenStream::next (token.cpp:12)",
    "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/arguments.py#L1200",
    "tcp://node01:29500 and http://node02:8080/metrics",
    "AWS_SHARED_CREDENTIALS_FILE=/home/alice/.aws/credentials HF_TOKEN_PATH=/home/alice/.hf",
]
