"""One masking of text read from the cluster before it is shown: a Pod's log line, its /metrics or
HTTP error body, its own argv. Whoever runs a Pod writes that text, and a report that quotes it
goes to a CI log, a change ticket or a SARIF viewer: what looks like a credential becomes MARK
(fixed, so a value's length is not shown either), the word that names it stays, so the line still
reads. Masking is for what is SHOWN: judges and parsers read the text as the engine wrote it,
before this (a KV-cache dtype is never a credential's shape nor a secret key's value).

Table-driven: TOKENS are the providers' own token formats (each cited); the key rule masks the
value of a `key=value`, `key: value`, `"key": "value"`, `'key': 'value'`, `--key value` or
`--key=value` whose key names a secret (secret_key() below), quoted or not; URL_USERINFO masks
the password (or token) in `scheme://user:password@host`; BEARER/BASIC the credential after an
HTTP authentication scheme (RFC 6750 b64token, RFC 7617 base64). Spans found by every rule on
the original text are merged, then each merged span is replaced once.

No library does this: detect-secrets and gitleaks are scanners that report findings in files,
not maskers of a line; the formats below are read from the providers' documents, as gitleaks'
rules (cmd/generate/config/rules/*.go) also cite them.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re

MARK = "***"

# name -> pattern of the whole token (masked whole). Lengths are the documented minimums, so a
# shorter word with the same prefix (an identifier such as `hf_overrides`) is left alone.
TOKENS = {
    # Hugging Face User Access Tokens: `hf_` + 34 letters (huggingface.co/docs/hub/security-tokens;
    # gitleaks huggingface.go), organization tokens `api_org_` + 34
    "huggingface": r"\b(?:hf|api_org)_[A-Za-z0-9]{30,}",
    # OpenAI project/service/admin and legacy keys, Anthropic `sk-ant-api03-`/`admin01-`/`oat01-`,
    # DeepSeek and other OpenAI-compatible `sk-` + 32 or more (gitleaks openai.go, anthropic.go)
    "sk": r"\bsk-(?:ant-[a-z]+\d\d-|proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
    # GitHub: ghp_ (personal), gho_ (OAuth), ghu_/ghs_ (App), ghr_ (refresh) + 36; fine-grained
    # `github_pat_` (github.blog changelog 2021-03-31 "authentication token format updates")
    "github": r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    # Slack bot/user/app/config tokens xoxb-, xoxp-, xoxa-, xoxs-, xoxr-, xoxe- (api.slack.com/authentication/token-types)
    "slack": r"\bxox[abeoprs]-[A-Za-z0-9\-]{10,}",
    # AWS access key ids: AKIA (long-term), ASIA (STS), ABIA, ACCA + 16 (IAM User Guide,
    # "reference_identifiers.html#identifiers-unique-ids")
    "aws-access-key-id": r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    # GitLab personal/deploy/runner/pipeline-trigger/feed/CI job/OAuth app tokens (docs.gitlab.com
    # security/tokens "Token prefixes")
    "gitlab": r"\bgl(?:pat|dt|rt|ptt|ft|cbt|oas|soat|imt|agent|rtr)-[A-Za-z0-9_\-]{20,}",
    # Google API keys: AIza + 35 (cloud.google.com/docs/authentication/api-keys)
    "google-api-key": r"\bAIza[0-9A-Za-z_\-]{35}",
    # NVIDIA NGC / build.nvidia.com keys, Groq, Replicate, npm, Stripe secret and restricted keys
    "nvidia": r"\bnvapi-[A-Za-z0-9_\-]{20,}",
    "groq": r"\bgsk_[A-Za-z0-9]{20,}",
    "replicate": r"\br8_[A-Za-z0-9]{20,}",
    "npm": r"\bnpm_[A-Za-z0-9]{36}",
    "stripe": r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
    # JSON Web Tokens (RFC 7519): base64url header `{"` = eyJ, payload, signature (may be empty)
    "jwt": r"\beyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]*",
    # a PEM private key, to its END line or the end of the line it starts on (RFC 7468)
    "pem-private-key": r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*$)",
}
_TOKENS = re.compile("|".join(f"(?:{p})" for p in TOKENS.values()), re.M)

# RFC 6750 section 2.1: `Bearer` 1*SP b64token; RFC 7617: `Basic` base64(user-id ":" password).
# Anywhere in a line (a header printed inside a repr, a curl command, an exception text).
_BEARER = re.compile(r"(?i)\bbearer[ \t]*[:=]?[ \t]*([A-Za-z0-9._~+/\-]+=*)")
_BASIC = re.compile(r"\bBasic[ \t]+([A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")
# an HTTP authentication scheme word kept before the credential it introduces
_SCHEME = re.compile(r"(?i)(?:bearer|basic|token|digest|negotiate|apikey|api-key|key|aws4-hmac-sha256|hmac|sharedkey)"
                     r"[ \t]+(?=\S)")

# RFC 3986 userinfo: `scheme://` then, before the host, `user:password@` or `token@`. A password
# may hold '/', '?', '#' or '@' (written unencoded in real logs): the userinfo ends at the last
# '@' of the word, unless what follows the first ':' is a port (digits, then '/').
_URL = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://")
_URL_WORD = re.compile(r"[^\s'\"`<>]*")
_PORT = re.compile(r"[^:/?#@]*:\d*(?:[/?#]|$)")

# `key` + separator: `=`, `:`, `=>`, `:=` (spaces around allowed), or a flag's `--key ` before its
# value. The key may be quoted, also with escaped quotes (JSON inside a string).
_KEY = re.compile(r"(?<![\w.\-\\])(?P<dash>--?)?(?P<kq>\\?[\"'`]|)(?P<key>[A-Za-z_][\w.\-]*)(?P=kq)"
                  r"(?P<sep>[ \t]*(?::=|=>|=|:)[ \t]*|(?(dash)[ \t]+|(?!)))")
# a value: double/single/backquoted (escapes honoured; an unclosed one runs to the line's end),
# JSON-escaped quotes, a [list], else a bare word (whitespace, quotes and '&' end it)
_VALUE = re.compile(r'"(?:[^"\\\n]|\\.)*(?:"|$)'
                    r"|'(?:[^'\\\n]|\\.)*(?:'|$)"
                    r"|`[^`\n]*(?:`|$)"
                    r'|\\"(?:(?!\\")[^\n])*(?:\\"|$)'
                    r"|\\'(?:(?!\\')[^\n])*(?:\\'|$)"
                    r"|\[(?:[^\]\\\n]|\\.)*(?:\]|$)"
                    r"|[^\s'\"`&]+", re.M)
_REST_OF_LINE = re.compile(r"[^\n'\"]*")
_NOT_SECRET = frozenset({"None", "none", "null", "nil", "True", "False", "true", "false", "''", '""', "[]",
                         "\\'\\'", '\\"\\"', MARK})
_TRAILING = ",;)]}>."

# A key is secret-like when its last word (split at _ - . and camelCase; after a trailing word of
# GENERIC such as `_value`) is one of SECRET_WORDS, or ends with one of SECRET_SUFFIXES
# (`csrftoken`, `dbpassword`), or is `key` after one of KEY_QUALIFIERS (`api_key`, `x-api-key`,
# `AWS_SECRET_ACCESS_KEY`). The last word: `hf_token` names a token, `token_ids`,
# `long_prefill_token_threshold` or `password_file` do not (an engine's own option names, read
# from parsers.json, are held to this in tests/test_masking.py).
SECRET_WORDS = frozenset({
    "password", "passwd", "passphrase", "pwd", "pass", "secret", "secrets", "token", "apikey", "auth",
    "authorization", "authentication", "credential", "credentials", "creds", "cookie", "session",
    "sessionid", "signature", "privatekey", "accesskey", "secretkey", "bearer", "jwt", "dsn", "otp",
})
SECRET_SUFFIXES = ("token", "secret", "password", "passwd", "apikey", "cookie", "privatekey", "secretkey",
                   "accesskey", "credentials", "sessionid")
KEY_QUALIFIERS = frozenset({
    "api", "access", "secret", "private", "client", "account", "master", "encryption", "signing", "license",
    "subscription", "service", "ssh", "auth", "app", "admin", "user", "shared", "storage", "session", "hmac",
    "sas", "consumer", "webhook", "deploy", "openai", "anthropic",
})
GENERIC = frozenset({"value", "val", "str", "string", "b64", "base64", "data", "env", "raw", "plain", "text"})
# `experts_per_token`, `time_to_first_token`: a count or a time about tokens, not a token
ABOUT_TOKENS = frozenset({"per", "first", "last", "next", "special", "end", "start", "stop"})
# keys whose whole value (a header's) runs to the end of the line: `Cookie: a=1; b=2`
WHOLE_LINE = frozenset({"cookie", "set-cookie"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


@functools.lru_cache(maxsize=4096)
def secret_key(key: str) -> bool:
    """Whether `key` (an identifier, header or flag name) names a credential."""
    words = [w.lower() for w in _WORDS.findall(key)]
    while len(words) > 1 and words[-1] in GENERIC:
        words.pop()
    if not words:
        return False
    last = words[-1]
    if last == "token" and len(words) > 1 and words[-2] in ABOUT_TOKENS:
        return False
    if last in SECRET_WORDS or (len(last) > 5 and last.endswith(SECRET_SUFFIXES)):
        return True
    return last == "key" and len(words) > 1 and words[-2] in KEY_QUALIFIERS


def _basic_credential(value: str) -> bool:
    """RFC 7617: the base64 of `user-id:password`."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


def _span(pattern: re.Pattern, text: str, pos: int) -> str:
    """What `pattern` (one that matches the empty string too) matches at `pos`."""
    m = pattern.match(text, pos)
    return m.group(0) if m else ""


def _userinfo(text: str, m: re.Match) -> tuple[int, int] | None:
    start = m.end()
    word = _span(_URL_WORD, text, start)
    at = word.rfind("@")
    if at <= 0:
        return None
    info = word[:at]
    if any(c in info for c in "/?#") and (":" not in info or _PORT.match(info)):
        return None     # `host:8000/path?x=a@b`: no userinfo, an '@' further on
    colon = info.find(":")
    return (start + colon + 1 if colon >= 0 else start), start + at


def _kv(text: str, m: re.Match) -> tuple[int, int] | None:
    key = m.group("key")
    if not secret_key(key):
        return None
    start = m.end()
    scheme = _SCHEME.match(text, start)
    if scheme and key.lower().endswith(("authorization", "auth")):
        start = scheme.end()
    if key.lower() in WHOLE_LINE and text[start:start + 1] not in ("'", '"'):
        end = start + len(_span(_REST_OF_LINE, text, start))
        return (start, end) if end > start else None
    v = _VALUE.match(text, start)
    if v is None or (m.group("dash") and not m.group("sep").strip() and v.group(0).startswith("-")):
        return None     # `--disable-auth --port 8000`: a flag without a value
    value = v.group(0)
    end = v.end()
    if value[0] not in "\"'`[\\":
        stripped = value.rstrip(_TRAILING)
        end -= len(value) - len(stripped)
        value = stripped
        # `[auth.py:123]`: a file and line, not `auth: 123`
        if m.group("sep") == ":" and not m.group("kq") and value.isdigit():
            return None
    if not value or value in _NOT_SECRET:
        return None
    return start, end


def spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) ranges of `text` to mask, merged and in order."""
    found = [m.span() for m in _TOKENS.finditer(text)]
    found += [m.span(1) for m in _BEARER.finditer(text)]
    found += [m.span(1) for m in _BASIC.finditer(text) if _basic_credential(m.group(1))]
    if "://" in text:
        scanned = 0     # a word holding several `scheme://` is read once (`a://a://...` stays linear)
        for m in _URL.finditer(text):
            if m.start() >= scanned:
                scanned = m.end() + len(_span(_URL_WORD, text, m.end()))
                if s := _userinfo(text, m):
                    found.append(s)
    masked = 0      # a key inside a value already masked is not read again (`token:token:...` stays linear)
    for m in _KEY.finditer(text):
        if m.start() >= masked and (s := _kv(text, m)):
            found.append(s)
            masked = s[1]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(s for s in found if s[1] > s[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def mask(text: str) -> str:
    """`text` with every credential-like span replaced by MARK."""
    if not text:
        return text
    out = []
    pos = 0
    for start, end in spans(text):
        out.append(text[pos:start])
        out.append(MARK)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def mask_range(text: str, start: int, end: int, context: int = 4096) -> str:
    """`text[start:end]` masked as the whole text would be, reading `context` characters either
    side: an excerpt or a cut line never shows a token's piece the cut made unrecognisable (the
    key of `password="a b"` before the cut, the rest of a token after it), and a long line is
    not read whole for a short excerpt."""
    lo, hi = max(0, start - context), min(len(text), end + context)
    out = []
    pos = start
    for s, e in spans(text[lo:hi]):
        s, e = max(s + lo, start), min(e + lo, end)
        if s >= e:
            continue
        out.append(text[pos:s])
        out.append(MARK)
        pos = e
    out.append(text[pos:end])
    return "".join(out)


def mask_argv(argv) -> list:
    """A container's command/args as shown: each element masked, and the element after a flag
    that names a secret (`--api-key VALUE`, `--hf-token VALUE`) masked whole."""
    out = []
    hide_next = False
    for element in argv:
        text = str(element)
        if hide_next and not text.startswith("-"):
            out.append(MARK)
            hide_next = False
            continue
        hide_next = text.startswith("--") and "=" not in text and secret_key(text[2:])
        masked = mask(text)
        out.append(element if masked == text else masked)
    return out
