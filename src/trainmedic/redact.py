"""Remove secrets from text before it is printed, saved or sent anywhere.

Probe output, incident reports, saved walks and triage excerpts end up in tickets and chat rooms;
an HF token or a password in a rendezvous URL must never travel with them. Redaction is pattern
based, in four families (the table of shapes is tested in `tests/security/`):

- values after a secret-looking name, wherever the name stands: `HF_TOKEN=...`, `"api_key": ...`,
  `password: ...`, also after another label (`RuntimeError: WANDB_API_KEY=... is invalid`);
- command-line flags with a secret-looking name (`--password X`, `--hf-token=X`), and the few
  commands that take a secret positionally (`wandb login KEY`, `sshpass -p X`, `curl -u u:X`);
- credentials in URLs (`redis://:pw@host`, `https://u:p@ss@host`), webhook URLs, `Authorization`
  headers, `.netrc` passwords, private-key blocks;
- well-known token shapes (`hf_`, `ghp_`, `github_pat_`, `AKIA`, `sk-`, `AIza`, JWTs, ...).

Every pattern runs in time linear in the text: names and tokens may only start where a run of
their characters starts (a look-behind), quantifiers are possessive, and a value, once looked
at, is consumed. Plain 40-hex strings stay: git commits look exactly like W&B keys, so a W&B key
is only recognised by its name, its `wandb login` or its `local-` prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

REDACTED = "<redacted>"

# ---- names ---------------------------------------------------------------------------------
# "Strong" words make any value secret; a weak KEY/SIG segment spares numbers and booleans
# (`key_size=64`, `num_key_value_heads=8`).
_STRONG = (
    r"TOKEN|SECRET|PASSW(?:OR)?D|PASSPHRASE|CREDENTIAL|API[_.-]?KEY|ACCESS[_.-]?KEY"
    r"|PRIVATE[_.-]?KEY|ACCOUNT[_.-]?KEY|SHARED[_.-]?KEY|SIGNING[_.-]?KEY|CLIENT[_.-]?KEY"
    r"|ENCRYPTION[_.-]?KEY|MASTER[_.-]?KEY|APIKEY|AUTHORIZATION|COOKIE|SESSION[_.-]?ID"
    r"|SIGNATURE|WEBHOOK|CONN(?:ECTION)?[_.-]?STR(?:ING)?"
    r"|(?:^|[_.-])AUTH(?:$|[_.-])|(?:^|[_.-])DSN$|(?:^|[_.-])PAT$"
    r"|[_.-]PWD(?:$|[_.-])|[_.-]PASS(?:$|[_.-])"
)
_WEAK = r"(?:^|[_.-])(?:KEY|SIG)(?:$|[_.-])"
_STRONG_RE = re.compile(_STRONG, re.IGNORECASE)
_WEAK_RE = re.compile(_WEAK, re.IGNORECASE)
# Names that contain a secret word but hold nothing secret: tokenizer settings, token counts,
# paths to a secret (not the secret), Megatron's MoE token options, attention key sizes.
_NOT_SECRET = re.compile(
    r"TOKENIZ|AUTHOR|TOKENS(?![A-Za-z])|TOKEN[_.-]?IDS?(?![A-Za-z])|TOKEN[_.-]?(?:DISPATCH|DROP)"
    r"|(?:PAD|EOS|BOS|UNK|SEP|CLS|MASK)[_.-]?TOKEN|KEY[_.-]?VALUE|QUERY[_.-]?KEY"
    r"|(?:^|[_.-])(?:FILE|PATH|DIR|SIZE|LEN|LENGTH|TYPE|NAME|COUNT|DIM|HEADS|CHANNELS|ENABLED"
    r"|METHOD|MODE|FORMAT|LOCATION|EXPIRY|EXPIRES(?:_AT)?|TTL|PROVIDER|HELPER)$",
    re.IGNORECASE,
)
_NOT_SECRET_CASED = re.compile(
    r"[a-z](?:File|Path|Dir|Size|Type|Name|Count|Method|Mode|Provider)$")


def _name_kind(name: str) -> str:
    """"strong", "weak" or "" for a variable, key, header or flag name."""
    if _NOT_SECRET.search(name) or _NOT_SECRET_CASED.search(name):
        return ""
    if _STRONG_RE.search(name):
        return "strong"
    if _WEAK_RE.search(name):
        return "weak"
    return ""


def is_secret_name(name: str) -> bool:
    """True when a variable or key name says it holds a secret (HF_TOKEN, WANDB_API_KEY...)."""
    name = name.strip().lstrip("-")
    if name in ("PWD", "OLDPWD"):  # the working directory, not a MySQL password
        return False
    return bool(_name_kind(name))


_HARMLESS_VALUE = re.compile(
    r"(?:true|false|yes|no|none|null|nil|on|off|unset|required|optional|\*+|x+|\.\.\.?|-)",
    re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?\d{1,12}(?:\.\d+)?")


def _keep_value(value: str, kind: str) -> bool:
    """Values that are never secrets: references, placeholders, booleans, redactions."""
    bare = value.strip("\"'\\`")
    if not bare or bare[0] in "$<%{[(" or bare.startswith(REDACTED):
        return True  # $HF_TOKEN, ${X}, <your token>, %TOKEN%, {token}, already redacted
    if _HARMLESS_VALUE.fullmatch(bare):
        return True
    return kind == "weak" and bool(_NUMBER.fullmatch(bare))


# ---- NAME = value / NAME: value ------------------------------------------------------------
_NAME_CHARS = r"A-Za-z0-9_.\-"
# A name starts only where a run of name characters starts (linear time), holds at most 128
# characters, and is followed by `=` or `:` (not `==`, not `::`), with an optional closing quote
# for JSON and Python dicts (`"api_key": ...`, `\"token\": ...`).
_ASSIGN = re.compile(
    rf"(?<![{_NAME_CHARS}])(?P<name>[A-Za-z_][{_NAME_CHARS}]{{0,127}}+)"
    r"(?P<sep>\\?[\"']?[ \t]*(?:=(?![=~])|:(?![:/]))[ \t]*)"
)
# A cheap prefilter: text without any of these words has no secret-named value.
_ANY_SECRET_WORD = re.compile(
    r"TOKEN|SECRET|PASS|CREDENTIAL|KEY|AUTH|COOKIE|SESSION|SIG|WEBHOOK|CONN|DSN|PAT|PWD",
    re.IGNORECASE)
# A value: escaped-quoted, quoted (to the closing quote, or to the line end when there is none),
# or a bare word. Possessive: once scanned, a value is consumed, so nothing is scanned twice.
_VALUE = re.compile(
    r"\\\"(?:[^\"\\\n]|\\[^\"\n])*+(?:\\\")?"
    r"|\\'(?:[^'\\\n]|\\[^'\n])*+(?:\\')?"
    r"|\"(?:[^\"\\\n]|\\.)*+\"?"
    r"|'[^'\n]*+'?"
    r"|(?:[^\s\"'`,;&})\]]|&(?![A-Za-z_][\w.\-]{0,127}+=))++"
)


def _quoted(value: str, replacement: str) -> str:
    """Keep the value's quotes around the replacement: `"<redacted>"`."""
    for quote in ('\\"', "\\'", '"', "'"):
        if value.startswith(quote):
            return quote + replacement + (quote if value.endswith(quote) and len(value) >
                                          2 * len(quote) - 1 else "")
    return replacement


def _assignments(text: str) -> str:
    if not _ANY_SECRET_WORD.search(text):
        return text
    out: list[str] = []
    pos = last = 0
    search, match_value = _ASSIGN.search, _VALUE.match
    while True:
        m = search(text, pos)
        if m is None:
            break
        pos = m.end()
        name = m["name"]
        kind = _name_kind(name) if name not in ("PWD", "OLDPWD") else ""
        if not kind:
            continue  # a label (`RuntimeError:`): the text after it is scanned for names too
        v = match_value(text, pos)
        if v is None:
            continue
        value = v[0]
        pos = v.end()
        if _keep_value(value, kind) or (m["sep"] == ":" and "." in name and value.isdigit()):
            continue  # `token.cpp:12` is a file and a line
        out.append(text[last : v.start()])
        out.append(_quoted(value, REDACTED))
        last = v.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# ---- flags and commands --------------------------------------------------------------------
_FLAG = re.compile(
    rf"(?<![{_NAME_CHARS}])(?P<flag>--?[A-Za-z][{_NAME_CHARS}]{{0,63}}+)"
    r"(?P<sep>=|[ \t]+)(?P<value>\"[^\"\n]*+\"?|'[^'\n]*+'?|[^\s\"'-][^\s\"']*+)"
)


def _flag(m: re.Match[str]) -> str:
    kind = _name_kind(m["flag"].lstrip("-"))
    if not kind or _keep_value(m["value"], kind):
        return m[0]
    return f"{m['flag']}{m['sep']}{_quoted(m['value'], REDACTED)}"


_SSHPASS = re.compile(r"(?<![\w-])(?P<lead>sshpass[ \t]+-p[ \t]*)(?P<value>\"[^\"\n]*+\"?"
                      r"|'[^'\n]*+'?|\S++)")
_CURL_USER = re.compile(
    r"(?<![\w-])(?P<lead>(?:-u|--user|--proxy-user|-U)(?:[ \t]+|=)?[\"']?[^\s:\"']{0,128}+:)"
    r"(?P<value>(?!\d+(?:[\s\"']|$))[^\s\"']++)")
_WANDB_LOGIN = re.compile(r"(?<![\w-])wandb[ \t]+login\b[^\n]*+")
_LONG_WORD = re.compile(r"(?<![\w-])[\w-]{32,}+")
_NETRC = re.compile(
    r"(?P<lead>(?:(?<![\w-])(?:machine|login|account|default)[ \t]+(?:\S++[ \t]++)?"
    r"|^[ \t]*+)(?:password|passwd)[ \t]+)(?P<value>\S++)",
    re.MULTILINE)


def _wandb_login(m: re.Match[str]) -> str:
    return _LONG_WORD.sub(REDACTED, m[0])


# ---- URLs, headers, key blocks ---------------------------------------------------------------
# userinfo runs to the last `@` before the host, so an `@` in the password is covered; an empty
# user (`redis://:pw@host`) too. A password must not contain `/` (RFC 3986 percent-encodes it).
_URL_CREDENTIALS = re.compile(
    r"(?<![A-Za-z0-9+.\-])(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]{0,31}+://)"
    r"(?P<userinfo>[^\s/?#:\"'<>]*+:[^\s/?#\"'<>]*)@"
)
_WEBHOOK = re.compile(
    r"(?P<lead>https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/"
    r"|[\w.-]+\.webhook\.office\.com/webhookb2/|outlook\.office\.com/webhook/"
    r"|chat\.googleapis\.com/v1/spaces/))(?P<value>[^\s\"'<>]++)"
)
_AUTH_HEADER = re.compile(
    r"(?i)(?<![\w-])(?P<lead>(?:proxy-)?authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
    r"(?:(?:bearer|basic|token|digest|negotiate|bot|apikey|sso-key|key)[ \t]+)?)"
    r"(?P<value>[^\s\"'\\,;]++)"
)
_BEARER = re.compile(r"(?i)(?<![\w-])(?P<lead>bearer[ \t]+)(?P<value>[A-Za-z0-9._~+/=\-]{8,}+)")
_COOKIE_HEADER = re.compile(r"(?i)(?<![\w-])(?P<lead>(?:set-)?cookie[ \t]*:[ \t]*)"
                            r"(?P<value>[^\n\"']++)")
_PEM = re.compile(
    r"(?P<begin>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)"
    r"(?P<body>(?:(?!-----(?:END|BEGIN) )[\s\S])*+)(?P<end>-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
    r"(?: BLOCK)?-----|(?=-----(?:END|BEGIN) )|\Z)"
)
# First lines of key bodies seen on their own (a log line, one line of a key): DER keys start
# with "MII", OpenSSH keys with base64("openssh-key-v1").
_KEY_BODY = re.compile(r"(?<![A-Za-z0-9+/])(?:MII[A-Za-z0-9+/]{60,}+|b3BlbnNzaC1rZXktdjE"
                       r"[A-Za-z0-9+/=]*+)={0,2}")

# ---- token shapes ------------------------------------------------------------------------------
_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"hf_[A-Za-z0-9]{20,}+|api_org_[A-Za-z0-9]{20,}+"  # Hugging Face user / org tokens
    r"|gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+"  # GitHub
    r"|gl(?:pat|dt|rt|ptt|cbt|oas|soat|imt|ft|agent)-[A-Za-z0-9_\-]{20,}+"  # GitLab
    r"|sk-[A-Za-z0-9_\-]{20,}+"  # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-)
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}+"  # Stripe
    r"|(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[0-9A-Z]{16}(?![0-9A-Za-z])"
    r"|AIza[0-9A-Za-z_\-]{35}+|GOCSPX-[A-Za-z0-9_\-]{20,}+|ya29\.[A-Za-z0-9_\-]{20,}+"  # Google
    r"|xox[abposre]-[A-Za-z0-9\-]{10,}+|xapp-[A-Za-z0-9\-]{10,}+"  # Slack
    r"|eyJ[A-Za-z0-9_\-]{8,}+\.eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+"  # JWT
    r"|nvapi-[A-Za-z0-9_\-]{20,}+"  # NVIDIA NGC
    r"|npm_[A-Za-z0-9]{30,}+|pypi-AgE[A-Za-z0-9_\-]{20,}+"  # npm, PyPI
    r"|SG\.[A-Za-z0-9_\-]{16,}+\.[A-Za-z0-9_\-]{16,}+"  # SendGrid
    r"|dapi[0-9a-f]{32}(?![0-9a-f])|r8_[A-Za-z0-9]{20,}+|gsk_[A-Za-z0-9]{20,}+"
    r"|hvs\.[A-Za-z0-9_\-]{20,}+|dop_v1_[0-9a-f]{64}|xai-[A-Za-z0-9]{20,}+"
    r"|local-[0-9a-f]{40}(?![0-9a-f])"  # W&B local-server keys
    r"|AGE-SECRET-KEY-1[0-9A-Z]{50,}+"
    r")"
)


def _lead_redacted(m: re.Match[str]) -> str:
    value = m["value"]
    if value.startswith(REDACTED):
        return m[0]
    return f"{m['lead']}{_quoted(value, REDACTED)}"


def _pem(m: re.Match[str]) -> str:
    body = m["body"]
    if body.strip() in ("", REDACTED):
        return m[0]
    lead = body[: len(body) - len(body.lstrip())]
    tail = body[len(body.rstrip()):]
    return f"{m['begin']}{lead}{REDACTED}{tail}{m['end']}"


_PASSES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str] | str], ...] = (
    (_PEM, _pem),
    (_KEY_BODY, REDACTED),
    (_URL_CREDENTIALS, lambda m: f"{m['scheme']}{REDACTED}@"),
    (_WEBHOOK, _lead_redacted),
    (_AUTH_HEADER, _lead_redacted),
    (_COOKIE_HEADER, _lead_redacted),
    (_BEARER, _lead_redacted),
    (_TOKEN_SHAPES, REDACTED),
    (_WANDB_LOGIN, _wandb_login),
    (_SSHPASS, _lead_redacted),
    (_CURL_USER, _lead_redacted),
    (_NETRC, _lead_redacted),
    (_FLAG, _flag),
)


def redact_text(text: str) -> str:
    """Return `text` with credentials replaced by `<redacted>`; linear in its length."""
    if not text:
        return text
    for pattern, replacement in _PASSES:
        text = pattern.sub(replacement, text)
    return _assignments(text)


def redact_command(command: str) -> str:
    """A command line with its secrets hidden (`--hf-token X`, `--api-key=X`, `curl -u a:X`)."""
    return redact_text(command or "")


def redact_argv(words: list[str]) -> list[str]:
    """`redact_command` for a command already split into words (`--hf-token`, `X`)."""
    out: list[str] = []
    wandb_login = False
    for i, word in enumerate(words):
        prev = words[i - 1] if i else ""
        wandb_login = wandb_login or (prev == "wandb" and word == "login")
        secret_flag = prev.startswith("-") and "=" not in prev and is_secret_name(prev)
        if (secret_flag and not word.startswith("-") and not _keep_value(word, "strong")) \
                or (prev == "-p" and "sshpass" in words[:i]) \
                or (wandb_login and _LONG_WORD.fullmatch(word)):
            out.append(REDACTED)
        elif prev in ("-u", "--user", "--proxy-user", "-U") and _CURL_USER.match(f"{prev} {word}"):
            out.append(_CURL_USER.sub(_lead_redacted, f"{prev} {word}")[len(prev) + 1:])
        else:
            out.append(redact_command(word))
    return out


def redact_env(mapping: Mapping[str, str]) -> dict[str, str]:
    """A copy of an environment with secret-named values hidden and others scrubbed."""
    return {
        name: REDACTED if is_secret_name(name) else redact_text(str(value))
        for name, value in mapping.items()
    }
