"""What a command was asked to do, as frozen, validated values: the only shape in which flags
travel past cli.py (kubectl's Complete -> Validate -> Run; stern's Config). Defaults live here.
"""

import re
from dataclasses import dataclass, field
from typing import Optional, Tuple

from kubectl_kvcache.errors import PluginError

DEFAULT_CHUNK_SIZE = 500            # objects per list page, as kubectl's --chunk-size
DEFAULT_FIELD_MANAGER = "kubectl-kvcache"
DEFAULT_WAIT_TIMEOUT = "60s"
DEFAULT_ROLLOUT_TIMEOUT = "10m"     # verify --wait, as kubectl rollout status --timeout would be set
TABLE, WIDE, JSON, YAML = "table", "wide", "json", "yaml"

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def parse_duration(text, flag="--request-timeout") -> Optional[float]:
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


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_REQUIREMENT = re.compile(rf"\s*(!?{_KEY}|{_KEY}\s*(==?|!=)\s*{_VALUE}|{_KEY}\s+(in|notin)\s+\(\s*{_VALUE}"
                          rf"(\s*,\s*{_VALUE})*\s*\))\s*")


def selector_requirements(selector):
    """A label selector's comma-separated requirements (commas inside `in (a,b)` kept)."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def validate_selector(selector):
    """A label selector as the API server parses one (k, !k, k=v, k==v, k!=v, k in (..), k notin (..),
    comma-separated), else one error naming it."""
    parts = selector_requirements(selector)
    bad = next((p for p in parts if not _REQUIREMENT.fullmatch(p)), None)
    if bad is not None:
        what = repr(bad.strip()) if bad.strip() else "an empty requirement"
        raise PluginError(f"invalid label selector {selector!r}: {what} is not k, !k, k=v, k!=v, k in (v1,v2) "
                          f"or k notin (v1,v2)")


@dataclass(frozen=True)
class Connection:
    """Where requests go and as whom: kubectl's connection flags, as given (None: not given)."""

    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    cluster: Optional[str] = None
    user: Optional[str] = None
    server: Optional[str] = None
    token: Optional[str] = None
    certificate_authority: Optional[str] = None
    insecure_skip_tls_verify: bool = False
    as_user: Optional[str] = None
    as_groups: Tuple[str, ...] = ()
    as_uid: Optional[str] = None
    request_timeout: str = "0"          # as written, for the undo command
    chunk_size: int = DEFAULT_CHUNK_SIZE

    @property
    def timeout(self) -> Optional[float]:
        """The request timeout in seconds; None: no limit."""
        return parse_duration(self.request_timeout)


@dataclass(frozen=True)
class Scope:
    """Which objects a command looks at."""

    namespace: Optional[str] = None     # -n; None: the context's namespace (or all with -A)
    all_namespaces: bool = False
    selector: Optional[str] = None      # -l, ANDed with the plugin's own selectors
    names: Tuple[str, ...] = ()         # Pod names (verify)
    files: Tuple[str, ...] = ()         # -f: read these instead of a cluster
    workloads: bool = False             # also read workload templates (injection opt-ins)
    workloads_skipped: bool = False     # --skip-workloads: the command would read them, the user said not to
    assume_setting: Optional[bool] = None   # --assume-setting: judge without reading the Setting


@dataclass(frozen=True)
class Output:
    format: str = TABLE
    headers: bool = True

    @property
    def wide(self) -> bool:
        return self.format == WIDE

    @property
    def structured(self) -> bool:
        return self.format in (JSON, YAML)


@dataclass(frozen=True)
class VerifyOptions:
    connection: Connection
    scope: Scope
    output: Output
    fail_on: Tuple[str, ...] = ()       # statuses that make exit 1; () = every status but OK
    watch: bool = False                 # -w: print a row whenever a replica's verdict changes
    wait: bool = False                  # block until every replica runs its expected value
    timeout: Optional[float] = None     # seconds --wait/--watch run; None: no limit


@dataclass(frozen=True)
class CheckOptions:
    """check, bindings and roles: one judgement, three views."""

    view: str                           # check | bindings | roles
    connection: Connection
    scope: Scope
    output: Output
    strict: bool = False
    selector: Optional[str] = None      # -l: which judged objects are reported (all in scope are read)


@dataclass(frozen=True)
class CompletionOptions:
    shell: str                          # bash | zsh | fish | powershell


@dataclass(frozen=True)
class SettingOptions:
    action: str                         # status | on | off
    connection: Connection
    output: Output = field(default_factory=Output)
    yes: bool = False
    dry_run: str = "none"               # none | client | server
    field_manager: str = DEFAULT_FIELD_MANAGER
    wait: bool = False
    timeout: Optional[float] = 60.0     # seconds --wait waits; None: no limit
    force: bool = False                 # `on`: go ahead although check reports errors
    skip_workloads: bool = False        # `on`: the gate's check does not read workload templates


DEFAULT_RECOVER_TIMEOUT = "10m"


@dataclass(frozen=True)
class RecoverOptions:
    """`recover BINDING`: plan (default), or --apply it."""

    binding: str
    connection: Connection
    scope: Scope
    output: Output = field(default_factory=lambda: Output(format="text"))
    dtype: Optional[str] = None
    name: Optional[str] = None          # the new Binding's name
    domain: Optional[str] = None        # the new Binding's spec.domain.name
    strategy: str = "side-by-side"      # side-by-side | replace
    apply: bool = False
    yes: bool = False
    dry_run: str = "none"               # none | client | server
    backup_dir: Optional[str] = None    # None: a new directory named after the Binding and the time
    timeout: Optional[float] = 600.0    # seconds each wait step waits; None: no limit
    field_manager: str = DEFAULT_FIELD_MANAGER
