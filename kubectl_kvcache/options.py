"""What a command was asked to do, as frozen, validated values: the only shape in which flags
travel past cli.py (kubectl's Complete -> Validate -> Run; stern's Config). Defaults live here.
"""

from __future__ import annotations

import re

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.record import Record

DEFAULT_CHUNK_SIZE = 500            # objects per list page, as kubectl's --chunk-size
DEFAULT_FIELD_MANAGER = "kubectl-kvcache"
DEFAULT_WAIT_TIMEOUT = "60s"
DEFAULT_ROLLOUT_TIMEOUT = "10m"     # verify --wait, as kubectl rollout status --timeout would be set
TABLE, WIDE, JSON, YAML = "table", "wide", "json", "yaml"

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
    """Where requests go and as whom: kubectl's connection flags, as given (None: not given)."""

    __slots__ = ("kubeconfig", "context", "cluster", "user", "server", "token", "certificate_authority",
                 "insecure_skip_tls_verify", "as_user", "as_groups", "as_uid", "request_timeout", "chunk_size")

    def __init__(self, kubeconfig: str | None = None, context: str | None = None, cluster: str | None = None,
                 user: str | None = None, server: str | None = None, token: str | None = None,
                 certificate_authority: str | None = None, insecure_skip_tls_verify: bool = False,
                 as_user: str | None = None, as_groups: tuple[str, ...] = (), as_uid: str | None = None,
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
        self.request_timeout = request_timeout  # as written, for the undo command
        self.chunk_size = chunk_size

    @property
    def timeout(self) -> float | None:
        """The request timeout in seconds; None: no limit."""
        return parse_duration(self.request_timeout)


class Output(Record):
    __slots__ = ("format", "headers")

    def __init__(self, format: str = TABLE, headers: bool = True):
        self.format = format
        self.headers = headers

    @property
    def wide(self) -> bool:
        return self.format == WIDE

    @property
    def structured(self) -> bool:
        return self.format in (JSON, YAML)


class VerifyOptions(Record):
    __slots__ = ("connection", "scope", "output", "fail_on", "watch", "wait", "timeout")

    def __init__(self, connection: Connection, scope: Scope, output: Output, fail_on: tuple[str, ...] = (),
                 watch: bool = False, wait: bool = False, timeout: float | None = None):
        self.connection = connection
        self.scope = scope
        self.output = output
        self.fail_on = fail_on      # statuses that make exit 1; () = every status but OK
        self.watch = watch          # -w: print a row whenever a replica's verdict changes
        self.wait = wait            # block until every replica runs its expected value
        self.timeout = timeout      # seconds --wait/--watch run; None: no limit

    def prefetch_scope(self) -> Scope | None:
        """The snapshot the command starts with (sources.load), which the command line loads while
        the command's modules import; None: --watch/--wait list with resourceVersions instead."""
        return None if (self.watch or self.wait) else self.scope


class CheckOptions(Record):
    """check, bindings and roles: one judgement, three views."""

    __slots__ = ("view", "connection", "scope", "output", "strict", "selector")

    def __init__(self, view: str, connection: Connection, scope: Scope, output: Output, strict: bool = False,
                 selector: str | None = None):
        self.view = view            # check | bindings | roles
        self.connection = connection
        self.scope = scope
        self.output = output
        self.strict = strict
        self.selector = selector    # -l: which judged objects are reported (all in scope are read)

    def prefetch_scope(self) -> Scope | None:
        """The snapshot the command starts with (sources.load): see VerifyOptions.prefetch_scope."""
        return self.scope


class CompletionOptions(Record):
    __slots__ = ("shell",)

    def __init__(self, shell: str):
        self.shell = shell          # bash | zsh | fish | powershell


class SettingOptions(Record):
    __slots__ = ("action", "connection", "output", "yes", "dry_run", "field_manager", "wait", "timeout", "force",
                 "skip_workloads")

    def __init__(self, action: str, connection: Connection, output: Output | None = None, yes: bool = False,
                 dry_run: str = "none", field_manager: str = DEFAULT_FIELD_MANAGER, wait: bool = False,
                 timeout: float | None = 60.0, force: bool = False, skip_workloads: bool = False):
        self.action = action                  # status | on | off
        self.connection = connection
        self.output = Output() if output is None else output
        self.yes = yes
        self.dry_run = dry_run                # none | client | server
        self.field_manager = field_manager
        self.wait = wait
        self.timeout = timeout                # seconds --wait waits; None: no limit
        self.force = force                    # `on`: go ahead although check reports errors
        self.skip_workloads = skip_workloads  # `on`: the gate's check does not read workload templates


DEFAULT_RECOVER_TIMEOUT = "10m"


class RecoverOptions(Record):
    """`recover BINDING`: plan (default), or --apply it."""

    __slots__ = ("binding", "connection", "scope", "output", "dtype", "name", "domain", "strategy", "apply", "yes",
                 "dry_run", "backup_dir", "timeout", "field_manager")

    def __init__(self, binding: str, connection: Connection, scope: Scope, output: Output | None = None,
                 dtype: str | None = None, name: str | None = None, domain: str | None = None,
                 strategy: str = "side-by-side", apply: bool = False, yes: bool = False, dry_run: str = "none",
                 backup_dir: str | None = None, timeout: float | None = 600.0,
                 field_manager: str = DEFAULT_FIELD_MANAGER):
        self.binding = binding
        self.connection = connection
        self.scope = scope
        self.output = Output() if output is None else output
        self.dtype = dtype
        self.name = name              # the new Binding's name
        self.domain = domain          # the new Binding's spec.domain.name
        self.strategy = strategy      # side-by-side | replace
        self.apply = apply
        self.yes = yes
        self.dry_run = dry_run        # none | client | server
        self.backup_dir = backup_dir  # None: a new directory named after the Binding and the time
        self.timeout = timeout        # seconds each wait step waits; None: no limit
        self.field_manager = field_manager
