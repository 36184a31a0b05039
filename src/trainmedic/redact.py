"""Remove secrets from text before it is printed, saved or sent anywhere.

Probe output, incident reports and triage excerpts end up in tickets and chat rooms; an HF token
or a password in a rendezvous URL must never travel with them. Redaction is pattern based:
values of secret-named variables, credentials in URLs, bearer tokens and well-known token shapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

REDACTED = "<redacted>"

_SECRET_WORDS = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY"
    r"|(?:^|[_.-])KEY(?:$|[_.-])|(?:^|[_.-])PWD(?:$|[_.-])|COOKIE|SESSION_?ID",
    re.IGNORECASE,
)
# Names that contain a secret word but hold nothing secret: tokenizer settings and token counts
# are everywhere in training logs (Megatron prints "consumed tokens: 88899584").
_NOT_SECRET = re.compile(
    r"TOKENIZ|AUTHOR|TOKENS(?![A-Za-z])|TOKEN_?IDS?(?![A-Za-z])"
    r"|(?:PAD|EOS|BOS|UNK|SEP|CLS|MASK)_?TOKEN",
    re.IGNORECASE,
)

_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s:@]+:[^/\s@]+@")
_BEARER = re.compile(r"(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=\-]{8,}")
_TOKEN_SHAPES = re.compile(
    r"\bhf_[A-Za-z0-9]{20,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bsk-[A-Za-z0-9_\-]{20,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}"
    r"|\bglpat-[A-Za-z0-9_\-]{20,}"
    r"|\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"
)
# A quoted value is hidden up to its closing quote: `PASSWORD="correct horse battery"` must not
# leak "horse battery".
_ASSIGNMENT = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)(?P<sep>[\"']?\s*[:=]\s*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[\"']?[^\s\"',;}]+)"
)


def is_secret_name(name: str) -> bool:
    """True when a variable or key name says it holds a secret (HF_TOKEN, WANDB_API_KEY...)."""
    return bool(_SECRET_WORDS.search(name)) and not _NOT_SECRET.search(name)


def _assignment(match: re.Match[str]) -> str:
    value = match["value"]
    quote = value[0] if value[0] in "\"'" else ""  # an unterminated quote is closed
    if not is_secret_name(match["name"]) or value.strip("\"'") == REDACTED:
        return match[0]
    return f"{match['name']}{match['sep']}{quote}{REDACTED}{quote}"


def redact_text(text: str) -> str:
    """Return `text` with credentials replaced by `<redacted>`."""
    if not text:
        return text
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m[1]} {REDACTED}", text)
    text = _TOKEN_SHAPES.sub(REDACTED, text)
    return _ASSIGNMENT.sub(_assignment, text)


_FLAG_VALUE = re.compile(
    r"(?P<flag>--?[A-Za-z][A-Za-z0-9_.-]*)(?P<sep>=|\s+)(?P<value>[^\s-][^\s]*)")


def _flag(match: re.Match[str]) -> str:
    if is_secret_name(match["flag"].lstrip("-")):
        return f"{match['flag']}{match['sep']}{REDACTED}"
    return match[0]


def redact_command(command: str) -> str:
    """A command line with secret flag values (`--hf-token X`, `--api-key=X`) hidden too.

    Only for text known to be a command line: in free text "--token" may be prose.
    """
    return redact_text(_FLAG_VALUE.sub(_flag, command or ""))


def redact_argv(words: list[str]) -> list[str]:
    """`redact_command` for a command already split into words (`--hf-token`, `X`)."""
    out: list[str] = []
    for word in words:
        secret_flag = bool(out) and out[-1].startswith("-") and "=" not in out[-1] \
            and is_secret_name(out[-1].lstrip("-"))
        out.append(REDACTED if secret_flag and not word.startswith("-")
                   else redact_command(word))
    return out


def redact_env(mapping: Mapping[str, str]) -> dict[str, str]:
    """A copy of an environment with secret-named values hidden and others scrubbed."""
    return {
        name: REDACTED if is_secret_name(name) else redact_text(str(value))
        for name, value in mapping.items()
    }
