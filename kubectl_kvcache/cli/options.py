"""Each command's validated options (kubectl's Options after Complete and Validate): built by its
module in cli/commands/ from the parsed flags, read by its flow in cli/flows/. Their own home, so
neither of the two imports the other for them (no import cycle, type-only ones included)."""

from __future__ import annotations

from kubectl_kvcache.kube.connection import DEFAULT_FIELD_MANAGER, Connection
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.record import Record
from kubectl_kvcache.render.output import Output


class Publish(Record):
    """--apply-reports: the -o policyreport/openreports reports kept in the cluster (cli/flows/reports.py)."""

    __slots__ = ("yes", "dry_run")

    def __init__(self, yes: bool = False, dry_run: str = "none"):
        self.yes = yes
        self.dry_run = dry_run      # none | client | server


class CheckOptions(Record):
    """check, bindings and roles: one judgement, three views."""

    __slots__ = ("view", "connection", "scope", "output", "strict", "selector", "policy", "observe", "publish")

    def __init__(self, view: str, connection: Connection, scope: Scope, output: Output, strict: bool = False,
                 selector: str | None = None, policy=None, observe: bool = False, publish: Publish | None = None):
        self.view = view            # check | bindings | roles
        self.connection = connection
        self.scope = scope
        self.output = output
        self.strict = strict
        self.selector = selector    # -l: which judged objects are reported (all in scope are read)
        self.policy = policy        # judge.policy.Policy of --policy, --ignore, --severity (None: none given)
        self.observe = observe      # check --observe: the capacity of the replicas a fix moves to another dtype
        self.publish = publish      # check --apply-reports (None: not asked)


class VerifyOptions(Record):
    __slots__ = ("connection", "scope", "output", "fail_on", "watch", "wait", "timeout", "deployments", "policy",
                 "observe", "publish")

    def __init__(self, connection: Connection, scope: Scope, output: Output, fail_on: tuple[str, ...] = (),
                 watch: bool = False, wait: bool = False, timeout: float | None = None,
                 deployments: tuple[str, ...] = (), policy=None, observe: bool = False,
                 publish: Publish | None = None):
        self.connection = connection
        self.scope = scope
        self.output = output
        self.fail_on = fail_on      # statuses that make exit 1; () = every status but OK
        self.watch = watch          # -w: print a row whenever a replica's verdict changes
        self.wait = wait            # block until every replica runs its expected value
        self.timeout = timeout      # seconds --wait/--watch run; None: no limit
        self.deployments = deployments  # --wait/--watch md/NAME: only these ModelDeployments
        self.policy = policy        # judge.policy.Policy of --policy, --ignore, --severity (None: none given)
        self.observe = observe      # read what each running engine reports it runs with (docs/verify.md)
        self.publish = publish      # --apply-reports (None: not asked)


class SettingOptions(Record):
    __slots__ = ("action", "connection", "output", "yes", "dry_run", "field_manager", "wait", "timeout", "force",
                 "skip_workloads")

    def __init__(self, action: str | None, connection: Connection | None, output: Output | None = None,
                 yes: bool = False, dry_run: str = "none", field_manager: str = DEFAULT_FIELD_MANAGER,
                 wait: bool = False, timeout: float | None = 60.0, force: bool = False, skip_workloads: bool = False):
        self.action = action                  # status | on | off; None: not given (a usage error)
        self.connection = connection
        self.output = Output() if output is None else output
        self.yes = yes
        self.dry_run = dry_run                # none | client | server
        self.field_manager = field_manager
        self.wait = wait
        self.timeout = timeout                # seconds --wait waits; None: no limit
        self.force = force                    # `on`: go ahead although check reports errors
        self.skip_workloads = skip_workloads  # `on`: the gate's check does not read workload templates


class RecoverOptions(Record):
    """`recover BINDING`: plan (default), or --apply it."""

    __slots__ = ("binding", "connection", "scope", "output", "dtype", "name", "domain", "strategy", "apply", "yes",
                 "dry_run", "backup_dir", "timeout", "field_manager")

    def __init__(self, binding: str, connection: Connection, scope: Scope, output: Output | None = None,
                 dtype: str | None = None, name: str | None = None, domain: str | None = None,
                 strategy: str | None = None, apply: bool = False, yes: bool = False, dry_run: str = "none",
                 backup_dir: str | None = None, timeout: float | None = 600.0,
                 field_manager: str = DEFAULT_FIELD_MANAGER):
        self.binding = binding
        self.connection = connection
        self.scope = scope
        self.output = Output() if output is None else output
        self.dtype = dtype
        self.name = name              # the new Binding's name
        self.domain = domain          # the new Binding's spec.domain.name
        self.strategy = strategy      # side-by-side | replace; None: the record's, else side-by-side
        self.apply = apply
        self.yes = yes
        self.dry_run = dry_run        # none | client | server
        self.backup_dir = backup_dir  # None: a new directory named after the Binding and the time
        self.timeout = timeout        # seconds each wait step waits; None: no limit
        self.field_manager = field_manager


class CompletionOptions(Record):
    __slots__ = ("shell",)

    def __init__(self, shell: str):
        self.shell = shell          # bash | zsh | fish | powershell


class AdmissionOptions(Record):
    """admission: what is read, and how the policies are printed and bound."""

    __slots__ = ("connection", "scope", "format", "actions")

    def __init__(self, connection: Connection, scope: Scope, format: str, actions: tuple[str, ...]):
        self.connection = connection
        self.scope = scope
        self.format = format        # yaml | json
        self.actions = actions      # validationActions of both bindings
