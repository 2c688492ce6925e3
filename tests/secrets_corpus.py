"""Secrets as they reach an engine's log, for the masking tests (tests/test_masking.py, the CLI
matrix in tests/render/test_masking_formats.py, the cluster tier's test_masking_cluster.py).

Each token is made here, deterministically, in its provider's documented format (prefix, alphabet,
length: the sources are cited beside FORMATS; no real leaked key is copied). Each line is the shape
of a real log line that carried such a value (cited: the engines' and their libraries' own
messages, lines users pasted in public issues), with the value put in.

An Entry's `secrets` must not survive masking, as whole strings; its `keep` must (the word that
names the value stays, so the line still reads). TUNED is what the masker was written against;
HELDOUT was written before the masker first ran on it and is never tuned on: its rate is reported
apart (test_masking.py::test_heldout_rate), not held to 100%.
"""

from __future__ import annotations

import base64
import random
import string

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"

# provider -> (prefix, alphabet, length after the prefix); sources:
# huggingface.co/docs/hub/security-tokens (hf_ + 34), gitleaks rules/huggingface.go (api_org_ + 34);
# OpenAI sk-proj-/sk-svcacct- keys (gitleaks rules/openai.go: 20+ chars, "T3BlbkFJ", 20+);
# gitleaks rules/anthropic.go (sk-ant-api03- + 93 + "AA"); github.blog changelog 2021-03-31
# (ghp_/gho_/ghu_/ghs_/ghr_ + 36, [A-Za-z0-9]); github_pat_ + 22 + "_" + 59 (fine-grained);
# api.slack.com token types (xoxb-/xoxp- + numeric and alphanumeric parts); AWS IAM User Guide,
# unique ID prefixes (AKIA/ASIA + 16 of [A-Z2-7]), secret access keys (40 base64 characters);
# docs.gitlab.com token prefixes (glpat-/gldt- + 20); RFC 7519 JWTs (three base64url parts).
FORMATS = {
    "hf": ("hf_", string.ascii_letters, 34),
    "hf-org": ("api_org_", string.ascii_letters, 34),
    "openai-proj": ("sk-proj-", URLSAFE, 74),       # + T3BlbkFJ + 74 (made below)
    "openai-svcacct": ("sk-svcacct-", URLSAFE, 74),
    "openai-legacy": ("sk-", ALNUM, 20),
    "anthropic": ("sk-ant-api03-", URLSAFE, 93),
    "deepseek": ("sk-", "0123456789abcdef", 32),
    "ghp": ("ghp_", ALNUM, 36),
    "gho": ("gho_", ALNUM, 36),
    "ghs": ("ghs_", ALNUM, 36),
    "ghu": ("ghu_", ALNUM, 36),
    "ghr": ("ghr_", ALNUM, 36),
    "github-pat": ("github_pat_", ALNUM, 22),       # + _ + 59
    "xoxb": ("xoxb-", string.digits, 12),           # + -12 digits + -24 alnum
    "xoxp": ("xoxp-", string.digits, 12),
    "akia": ("AKIA", string.ascii_uppercase + "234567", 16),
    "asia": ("ASIA", string.ascii_uppercase + "234567", 16),
    "aws-secret": ("", B64, 40),
    "glpat": ("glpat-", URLSAFE, 20),
    "gldt": ("gldt-", URLSAFE, 20),
    "google": ("AIza", URLSAFE, 35),
    "nvapi": ("nvapi-", URLSAFE, 64),
    "password": ("", ALNUM + "!#%+,.:;=?^~", 18),
    "plain": ("", ALNUM, 24),
}


def token(kind: str, seed: int = 0) -> str:
    """A value in `kind`'s format, the same for the same (kind, seed)."""
    rnd = random.Random(f"{kind}/{seed}")
    prefix, alphabet, n = FORMATS[kind]
    body = "".join(rnd.choice(alphabet) for _ in range(n))
    if kind.startswith("openai-") and kind != "openai-legacy":
        body += "T3BlbkFJ" + "".join(rnd.choice(URLSAFE) for _ in range(74))
    elif kind == "openai-legacy":
        body += "T3BlbkFJ" + "".join(rnd.choice(ALNUM) for _ in range(20))
    elif kind == "anthropic":
        body += "AA"
    elif kind == "github-pat":
        body += "_" + "".join(rnd.choice(ALNUM) for _ in range(59))
    elif kind in ("xoxb", "xoxp"):
        body += "-" + "".join(rnd.choice(string.digits) for _ in range(12)) + "-" + \
            "".join(rnd.choice(ALNUM) for _ in range(24))
    return prefix + body


def jwt(seed: int = 0) -> str:
    """A JWT (RFC 7519) of a Kubernetes service account's shape: header, claims, signature."""
    rnd = random.Random(f"jwt/{seed}")

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")
    header = b64(b'{"alg":"RS256","kid":"' + "".join(rnd.choice(ALNUM) for _ in range(16)).encode() + b'"}')
    claims = b64(b'{"aud":["https://kubernetes.default.svc"],"exp":' + str(rnd.randrange(10 ** 9, 2 * 10 ** 9)).encode()
                 + b',"sub":"system:serviceaccount:team:vllm"}')
    return f"{header}.{claims}.{b64(bytes(rnd.randrange(256) for _ in range(64)))}"


def basic(user: str, password: str) -> str:
    """RFC 7617: base64(user ":" password), with its = padding."""
    return base64.b64encode(f"{user}:{password}".encode()).decode()


class Entry:
    __slots__ = ("id", "line", "secrets", "keep", "source")

    def __init__(self, id: str, line: str, secrets: tuple, keep: tuple = (), source: str = ""):
        self.id, self.line, self.secrets, self.keep, self.source = id, line, tuple(secrets), tuple(keep), source

    def __repr__(self):
        return f"Entry({self.id})"


def _tuned():
    pw, pw2 = token("password", 1), token("password", 2)
    j = jwt(1)
    ak, sk = token("akia", 1), token("aws-secret", 1)
    b = basic("deploy", pw2)
    spaced = "correct horse battery staple"
    quoted = 'pa\\"ss word 9'
    return [
        # redis-py's ConnectionError, as LMCache's remote backend raises it (LMCache/LMCache#1491)
        Entry("url-redis-password-only", f"redis.exceptions.ConnectionError: Error 111 connecting to "
              f"redis://:{pw}@10.96.0.12:6379/0. Connection refused.", (pw,), ("redis://",),
              "LMCache/LMCache#1491"),
        Entry("url-https-user-password", f"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='models."
              f"internal', port=443): Max retries exceeded with url: https://deploy:{pw2}@models.internal/v1/m",
              (pw2,), ("deploy",), "requests' MaxRetryError text"),
        Entry("url-token-only", f"subprocess.CalledProcessError: Command '['git', 'clone', 'https://{token('ghp', 1)}"
              f"@github.com/org/private-model.git']' returned non-zero exit status 128.", (token("ghp", 1),),
              ("github.com",), "subprocess.CalledProcessError.__str__"),
        Entry("url-s3-aws-keys", f"ValueError: cannot load model from s3://{ak}:{sk}@bucket/qwen3-8b",
              (ak, sk), ("s3://",), "vllm model loader error shape"),
        Entry("url-password-with-slash-and-at", f"sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) "
              f"connection to postgresql://vllm:p/a@ss#{pw}@db:5432/meta failed", (f"p/a@ss#{pw}", pw),
              ("postgresql://vllm:",), "SQLAlchemy OperationalError"),
        Entry("bearer-jwt-header", f"RuntimeError: request failed, headers: Authorization: Bearer {j}",
              (j, j.split(".")[1], j.split(".")[2]), ("Authorization", "Bearer"), "issue 47"),
        Entry("bearer-in-dict-repr", f"huggingface_hub.errors.HfHubHTTPError: 401 Client Error, request headers "
              f"{{'authorization': 'Bearer {token('hf', 2)}', 'user-agent': 'unknown/None'}}",
              (token("hf", 2),), ("authorization",), "huggingface_hub/utils/_http.py hf_raise_for_status"),
        Entry("basic-credential", f"httpx.HTTPStatusError: 401 Unauthorized, Authorization: Basic {b}",
              (b, b.rstrip("=")), ("Authorization: Basic",), "RFC 7617"),
        Entry("curl-bearer-sk", f"subprocess.CalledProcessError: Command 'curl -sf -H \"Authorization: Bearer "
              f"{token('openai-proj', 1)}\" http://127.0.0.1:8000/v1/models' returned non-zero exit status 22.",
              (token("openai-proj", 1),), ("curl",), "a readiness probe's command"),
        Entry("bare-hf", f"OSError: There was a specific connection error when trying to load m: 401 Client Error "
              f"(token {token('hf', 1)} is invalid)", (token("hf", 1),), ("401 Client Error",),
              "transformers/utils/hub.py cached_file"),
        Entry("bare-sk-proj", f"openai.AuthenticationError: Incorrect API key provided: {token('openai-proj', 2)}.",
              (token("openai-proj", 2),), ("Incorrect API key",), "openai-python AuthenticationError"),
        Entry("bare-sk-legacy", f"ValueError: bad key {token('openai-legacy', 1)}", (token("openai-legacy", 1),)),
        Entry("bare-anthropic", f"anthropic.AuthenticationError: invalid x-api-key {token('anthropic', 1)}",
              (token("anthropic", 1),), ("x-api-key",)),
        Entry("bare-deepseek", f"RuntimeError: upstream refused key {token('deepseek', 1)}", (token("deepseek", 1),)),
        Entry("bare-github", f"RuntimeError: clone failed for {token('gho', 1)} {token('ghs', 1)} "
              f"{token('github-pat', 1)}", (token("gho", 1), token("ghs", 1), token("github-pat", 1))),
        Entry("bare-slack", f"RuntimeError: alert webhook refused {token('xoxb', 1)}", (token("xoxb", 1),)),
        Entry("bare-aws-ids", f"botocore.exceptions.ClientError: An error occurred (InvalidAccessKeyId): "
              f"{token('akia', 2)} / {token('asia', 1)}", (token("akia", 2), token("asia", 1)), ("ClientError",),
              "botocore ClientError"),
        Entry("bare-gitlab", f"RuntimeError: registry login failed with {token('glpat', 1)}", (token("glpat", 1),)),
        Entry("bare-jwt", f"kubernetes.client.exceptions.ApiException: (401) token {jwt(2)} rejected",
              (jwt(2), jwt(2).split(".")[2])),
        Entry("bare-google-nvapi", f"RuntimeError: keys {token('google', 1)} {token('nvapi', 1)} refused",
              (token("google", 1), token("nvapi", 1))),
        Entry("env-aws-secret", f"RuntimeError: environment AWS_ACCESS_KEY_ID={token('akia', 3)} "
              f"AWS_SECRET_ACCESS_KEY={token('aws-secret', 2)} AWS_REGION=us-east-1",
              (token("akia", 3), token("aws-secret", 2)), ("AWS_SECRET_ACCESS_KEY", "AWS_REGION=us-east-1")),
        Entry("dict-secret-key", f"ValueError: invalid kv_transfer_config {{'kv_connector': 'MooncakeConnectorV1', "
              f"'secret_key': '{token('plain', 1)}', 'kv_cache_dtype': 'fp8'}}", (token("plain", 1),),
              ("secret_key", "'kv_cache_dtype': 'fp8'"), "vllm KVTransferConfig repr"),
        Entry("kwargs-password-spaces", f"pydantic_core._pydantic_core.ValidationError: 1 validation error for "
              f"Store: password=\"{spaced}\" host=db", (spaced, "horse battery"), ("password=", "host=db")),
        Entry("kwargs-password-escaped-quote", f'ValueError: bad config password="{quoted}" user=x',
              ("ss word 9", 'pa\\"ss'), ("password=", "user=x")),
        Entry("json-api-key", f'ValueError: {{"api_key": "{token("plain", 2)}", "kv_cache_dtype": "fp8_e5m2"}}',
              (token("plain", 2),), ('"api_key"', '"kv_cache_dtype": "fp8_e5m2"')),
        Entry("json-escaped", f'ValueError: "{{\\"token\\": \\"{token("plain", 3)} x\\", \\"n\\": 1}}"',
              (token("plain", 3),), ("token",)),
        Entry("yaml-token", f"yaml.constructor.ConstructorError: in config token: {token('plain', 4)}",
              (token("plain", 4),), ("token:",)),
        Entry("argparse-hf-token", f"api_server.py: error: unrecognized arguments: --hf-token {token('hf', 3)}",
              (token("hf", 3),), ("--hf-token",), "Lib/argparse.py error()"),
        Entry("flag-api-key-equals", f"RuntimeError: relaunch with --api-key={token('plain', 5)} --port 8000",
              (token("plain", 5),), ("--api-key", "--port 8000")),
        Entry("env-hf-hub-token", f"RuntimeError: HUGGING_FACE_HUB_TOKEN={token('plain', 6)} is not valid",
              (token("plain", 6),), ("HUGGING_FACE_HUB_TOKEN",)),
        Entry("cookie-header", f"RuntimeError: proxy answered 403 to Cookie: session={token('plain', 7)}; "
              f"csrftoken={token('plain', 8)}", (token("plain", 7), token("plain", 8)), ("Cookie",)),
        Entry("x-api-key-header", f"RuntimeError: gateway said 401 for X-Api-Key: {token('plain', 9)}",
              (token("plain", 9),), ("X-Api-Key",)),
        Entry("query-token", f"RuntimeError: GET https://models.internal/m?token={token('plain', 10)}&rev=main "
              f"failed", (token("plain", 10),), ("rev=main",)),
        Entry("pem-private-key", f"ValueError: could not load key -----BEGIN RSA PRIVATE KEY-----"
              f"{token('aws-secret', 3)}", (token("aws-secret", 3),), ("could not load key",)),
        Entry("unclosed-quote", f"ValueError: password='{token('plain', 11)}", (token("plain", 11),)),
    ]


def _heldout():
    pw = token("password", 20)
    return [
        Entry("h-amqp", f"pika.exceptions.AMQPConnectionError: amqp://guest:{pw}@rabbitmq:5672/", (pw,)),
        Entry("h-mongodb-srv", f"pymongo.errors.ServerSelectionTimeoutError: mongodb+srv://admin:"
              f"{token('password', 21)}@cluster0.example.net/db", (token("password", 21),)),
        Entry("h-proxy-authorization", f"RuntimeError: Proxy-Authorization: Basic "
              f"{basic('svc', token('password', 22))}", (basic("svc", token("password", 22)),)),
        Entry("h-x-auth-token", f"RuntimeError: X-Auth-Token: {token('plain', 20)}", (token("plain", 20),)),
        Entry("h-json-client-secret", f'ValueError: {{"client_id": "abc", "client_secret": "{token("plain", 21)}"}}',
              (token("plain", 21),)),
        Entry("h-env-db-pass", f"RuntimeError: DB_PASS={token('password', 23)} rejected", (token("password", 23),)),
        Entry("h-env-openai", f"RuntimeError: OPENAI_API_KEY={token('openai-svcacct', 1)}",
              (token("openai-svcacct", 1),)),
        Entry("h-flag-openai-api-key", f"error: unrecognized arguments: --openai-api-key {token('plain', 22)}",
              (token("plain", 22),)),
        Entry("h-ghu-ghr", f"RuntimeError: {token('ghu', 1)} and {token('ghr', 1)}", (token("ghu", 1), token("ghr", 1))),
        Entry("h-xoxp", f"slack_sdk.errors.SlackApiError: invalid_auth for {token('xoxp', 1)}", (token("xoxp", 1),)),
        Entry("h-hf-org", f"OSError: {token('hf-org', 1)} cannot read the repo", (token("hf-org", 1),)),
        Entry("h-github-token-scheme", f"RuntimeError: Authorization: token {token('ghp', 20)}", (token("ghp", 20),)),
        Entry("h-passphrase-yaml", f"ValueError: passphrase: '{token('password', 24)}'", (token("password", 24),)),
        Entry("h-camel-secret-access-key", f"RuntimeError: SecretAccessKey={token('aws-secret', 20)}",
              (token("aws-secret", 20),)),
        Entry("h-camel-json", f'ValueError: {{"secretAccessKey": "{token("aws-secret", 21)}"}}',
              (token("aws-secret", 21),)),
        Entry("h-azure-sas-sig", f"azure.core.exceptions.ClientAuthenticationError: https://acct.blob.core.windows.net/"
              f"c/m?sv=2022-11-02&sig={token('plain', 23)}&se=2030-01-01", (token("plain", 23),)),
        Entry("h-slack-webhook-path", f"RuntimeError: POST https://hooks.slack.com/services/T0000/B0000/"
              f"{token('plain', 24)} failed", (token("plain", 24),)),
        Entry("h-gldt", f"RuntimeError: deploy token {token('gldt', 1)} expired", (token("gldt", 1),)),
        Entry("h-aws-session-token", f"RuntimeError: aws_session_token={token('aws-secret', 22)}",
              (token("aws-secret", 22),)),
        Entry("h-bearer-lowercase", f"RuntimeError: authorization: bearer {jwt(20)}", (jwt(20),)),
    ]


TUNED = _tuned()
HELDOUT = _heldout()
