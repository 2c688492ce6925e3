"""The connection as the user gave it (kubectl's flags, shared by every layer below cli/) and
durations as kubectl takes them. Each command's own options live with its flags
(cli/commands/), which objects it reads in load/scope.py, what -o asked for in render/output.py."""

from __future__ import annotations

import re

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.record import Record

DEFAULT_CHUNK_SIZE = 500            # objects per list page, as kubectl's --chunk-size
DEFAULT_FIELD_MANAGER = "kubectl-kvcache"

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def parse_duration(text, flag="--request-timeout") -> float | None:
    """`0` -> None (no limit); `10`, `10s`, `500ms`, `1m30s`, `1h` -> seconds, as kubectl takes them."""
    text = str(text).strip()
    if text in ("", "0"):
        return None
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text) or None
    if not re.fullmatch(r"(\d+(\.\d+)?(ms|h|m|s))+", text):
        raise PluginError(f"invalid duration {text!r} for {flag} (use e.g. 30s, 2m, 1h)")
    total = sum(float(n) * _UNITS[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ms|h|m|s)", text))
    return total or None


class Connection(Record):
    """Where requests go and as whom: kubectl's connection flags, as given (None or empty: not given)."""

    __slots__ = ("kubeconfig", "context", "cluster", "user", "server", "token", "certificate_authority",
                 "insecure_skip_tls_verify", "as_user", "as_groups", "as_uid", "as_user_extra", "tls_server_name",
                 "client_certificate", "client_key", "username", "password", "proxy_url", "disable_compression",
                 "request_timeout", "chunk_size")

    def __init__(self, kubeconfig: str | None = None, context: str | None = None, cluster: str | None = None,
                 user: str | None = None, server: str | None = None, token: str | None = None,
                 certificate_authority: str | None = None, insecure_skip_tls_verify: bool = False,
                 as_user: str | None = None, as_groups: tuple[str, ...] = (), as_uid: str | None = None,
                 as_user_extra: tuple[str, ...] = (), tls_server_name: str | None = None,
                 client_certificate: str | None = None, client_key: str | None = None, username: str | None = None,
                 password: str | None = None, proxy_url: str | None = None, disable_compression: bool = False,
                 request_timeout: str = "0", chunk_size: int = DEFAULT_CHUNK_SIZE):
        self.kubeconfig = kubeconfig
        self.context = context
        self.cluster = cluster
        self.user = user
        self.server = server
        self.token = token
        self.certificate_authority = certificate_authority
        self.insecure_skip_tls_verify = insecure_skip_tls_verify
        self.as_user = as_user
        self.as_groups = as_groups
        self.as_uid = as_uid
        self.as_user_extra = as_user_extra          # --as-user-extra KEY=VALUE, repeatable
        self.tls_server_name = tls_server_name
        self.client_certificate = client_certificate
        self.client_key = client_key
        self.username = username
        self.password = password
        self.proxy_url = proxy_url
        self.disable_compression = disable_compression
        self.request_timeout = request_timeout  # as written, for the undo command
        self.chunk_size = chunk_size

    @property
    def timeout(self) -> float | None:
        """The request timeout in seconds; None: no limit."""
        return parse_duration(self.request_timeout)
