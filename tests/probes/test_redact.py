from trainmedic.redact import REDACTED, is_secret_name, redact_env, redact_text

SECRETS = {
    "HF_TOKEN": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "WANDB_API_KEY": "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GITHUB_TOKEN": "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
    "DB_PASSWORD": "hunter2-correct-horse",
}


def test_secret_names_are_recognised_and_tokenizer_settings_are_not():
    for name in [*SECRETS, "OPENAI_API_KEY", "NCCL_IB_PKEY_AUTH_TOKEN", "MY_SECRET", "PASSWD"]:
        assert is_secret_name(name), name
    for name in ["TOKENIZERS_PARALLELISM", "NCCL_DEBUG", "MASTER_ADDR", "GIT_AUTHOR_NAME"]:
        assert not is_secret_name(name), name


def test_redact_env_hides_values_of_secret_names_and_keeps_others():
    env = {**SECRETS, "NCCL_DEBUG": "INFO", "MASTER_ADDR": "tcp://bob:s3cr3tpw@node01:29500"}
    out = redact_env(env)
    for name in SECRETS:
        assert out[name] == REDACTED
    assert out["NCCL_DEBUG"] == "INFO"
    assert out["MASTER_ADDR"] == f"tcp://{REDACTED}@node01:29500"


def test_redact_text_covers_assignments_urls_bearer_and_token_shapes():
    text = "\n".join(
        [
            "export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            'config: {"wandb_api_key": "4f1c2d3e4f5a6b7c8d9e0f1a"}',
            "AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "git clone https://alice:pa55word@github.com/org/repo.git",
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh",
            "loaded token ghp_1234567890abcdefghijklmnopqrstuvwxyzAB from cache",
            "key id AKIAIOSFODNN7EXAMPLE and sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX",
            "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        ]
    )
    out = redact_text(text)
    for secret in [
        "hf_AbCdEf", "4f1c2d3e", "wJalrXUtn", "pa55word", "eyJhbGci", "ghp_1234", "AKIAIOSF",
        "sk-proj-ABC",
    ]:
        assert secret not in out, secret
    assert "https://<redacted>@github.com/org/repo.git" in out
    assert "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>" in out  # no false positive


def test_redact_text_is_idempotent_and_handles_empty():
    once = redact_text("PASSWORD=abc123")
    assert once == f"PASSWORD={REDACTED}"
    assert redact_text(once) == once
    assert redact_text("") == ""


def test_token_counts_and_special_tokens_are_not_secrets():
    """Megatron and HF print token counts and special tokens; redacting them hides evidence."""
    line = (" iteration     1000/  500000 | consumed samples: 1024000 | consumed tokens: "
            "88899584 | lm loss: 2.1E+00 | eos_token: </s> | tokens_per_sec=1234")
    assert redact_text(line) == line
    assert redact_text("api_token: s3cr3t HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz") == (
        "api_token: <redacted> HF_TOKEN=<redacted>")


def test_quoted_values_are_hidden_whole():
    text = 'export DB_PASSWORD="correct horse battery" NCCL_DEBUG=INFO'
    assert redact_text(text) == f'export DB_PASSWORD="{REDACTED}" NCCL_DEBUG=INFO'
    assert redact_text("{'api_key': 'two words', 'user': 'bob'}") == (
        f"{{'api_key': '{REDACTED}', 'user': 'bob'}}")
    assert "unterminated" not in redact_text('HF_TOKEN="unterminated value')
    assert redact_text(redact_text(text)) == redact_text(text)


def test_split_command_lines_hide_the_word_after_a_secret_flag():
    from trainmedic.redact import redact_argv

    words = ["torchrun", "--hf-token", "abc123", "--nproc-per-node", "8", "--api-key=XYZ987",
             "--rdzv-endpoint=https://u:pw1234@etcd:2379", "--token", "--standalone"]
    assert redact_argv(words) == [
        "torchrun", "--hf-token", REDACTED, "--nproc-per-node", "8", f"--api-key={REDACTED}",
        f"--rdzv-endpoint=https://{REDACTED}@etcd:2379", "--token", "--standalone"]
