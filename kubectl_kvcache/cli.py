"""Flags to options, options to a command, outcome to an exit code. No judgement lives here.

kubectl's Complete -> Validate -> Run: argparse reads the flags, `options_for` turns them into
frozen option objects once (validating them: nothing below this module sees argparse), and the
dispatch table runs the command module. Command modules (and the kubernetes client, yaml,
tabulate under them) are imported only when run, so `--help` and `version` stay fast.
"""

import argparse
import contextlib
import importlib
import os
import re
import sys
import textwrap

from kubectl_kvcache import __version__, exitcodes, label_selector, names
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.options import (DEFAULT_CHUNK_SIZE, DEFAULT_FIELD_MANAGER, DEFAULT_RECOVER_TIMEOUT,
                                     DEFAULT_ROLLOUT_TIMEOUT, DEFAULT_WAIT_TIMEOUT, CheckOptions, CompletionOptions,
                                     Connection, Output, RecoverOptions, SettingOptions, VerifyOptions, parse_duration)
from kubectl_kvcache.load.scope import Scope

PROG = "kubectl kvcache"
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = exitcodes.OK, exitcodes.FINDINGS, exitcodes.ERROR

DESCRIPTION = """\
What --kv-cache-dtype every vLLM and SGLang engine of the GPUStack Operator will really run
with, judged against its KVCachePoolBinding, before and after the upgrade that makes the
Binding's dtype the engine's argument.
"""

EPILOG = f"""\
Examples:
  # what every engine replica runs with, in every namespace
  {PROG} verify -A

  # everything the upgrade will break, with the fix for each finding
  {PROG} check -A -o wide

  # the same on saved objects (kubectl get -o json output), no cluster needed
  {PROG} check -A -f saved.json

Exit codes: 0 all good, 1 findings (something is not OK), 2 the plugin could not do its job.
Use "{PROG} COMMAND --help" for more about a command.
"""

SCOPE_NOTE = """\
Scope: -n NAMESPACE (default: the context's namespace), -A every namespace (it wins over -n, as in
kubectl), -f PATH saved objects instead of a cluster (all namespaces unless -n).
"""

HELP = {
    "verify": dict(
        help="the effective dtype of every pool-attached engine container, against its Binding",
        description="For each pool-attached engine container: the --kv-cache-dtype the engine will run with "
                    "(parsed as that engine version parses its argv), against its Binding. Naming PODs also "
                    "prints their argv with every occurrence marked.\n\nStatus: OK, MISMATCH, MISSING (not "
                    "rolled yet), REJECTED (the engine exits on its arguments), UNKNOWN (cannot be decided, with "
                    "why). -o wide adds the reason and the fix; after a summary that is not all OK, the command "
                    "to run next is printed on stderr.\n\n" + SCOPE_NOTE
                    + "-l/--selector selects Pods by label (ANDed with the plugin's own selectors).",
        examples=("verify -A", "verify -n llm-prod -o wide", "verify -n llm-prod llama-long-server-0",
                  "verify -A -l app.kubernetes.io/instance=llama-long", "verify -A --assume-setting on",
                  "verify -f saved.json -o json")),
    "check": dict(
        help="everything the upgrade guide asks you to check before turning the Setting on",
        description="Everything the upgrade guide asks you to check before the Setting is on: Binding spellings "
                    "against their engines, Bindings reusing a claimed domain, roles that pass the flag "
                    "themselves, take-over roles, injection opt-ins the webhook will refuse, and the Setting. "
                    "-o wide adds the fix of each finding.\n\n" + SCOPE_NOTE
                    + "-l/--selector keeps the findings about objects (Bindings, ModelDeployments, Pods, workloads) "
                      "with those labels; everything in scope is still read and judged, and the Setting's "
                      "finding is always shown.",
        examples=("check -A", "check -n llm-prod -o wide", "check -A --strict",
                  "check -A -l team=research", "check -A -f saved.json -o json")),
    "bindings": dict(
        help="every KVCachePoolBinding with its dtype, the engines that use it and a verdict",
        description="Every KVCachePoolBinding in scope: its pool, domain and dtype, the engine releases the "
                    "dtype is handed to, who uses it, and a verdict (OK, REJECTED by <engine>, WARNING auto, "
                    "UNUSED, DOMAIN CLAIMED by <Binding>, MISSING, UNKNOWN). The upgrade guide's \"Check every "
                    "Binding first\", judged.\n\n" + SCOPE_NOTE
                    + "-l/--selector keeps the Bindings with those labels (a MISSING row has no object, so no "
                      "labels); their users are still read in full.",
        examples=("bindings -A", "bindings -n llm-prod -o wide", "bindings -A -l team=research",
                  "bindings -A -o json")),
    "roles": dict(
        help="roles that pass --kv-cache-dtype themselves, and take-over roles, on pools",
        description="Roles of pool-attached ModelDeployments that pass --kv-cache-dtype themselves in extraArgs "
                    "(the webhook refuses their next edit), and take-over roles (command set: the operator renders "
                    "nothing for them): the flag and where it is, what the role runs today and after the upgrade, "
                    "and a verdict. The upgrade guide's \"Find roles that pass the flag themselves\", judged.\n\n"
                    + SCOPE_NOTE + "-l/--selector keeps the roles of ModelDeployments with those labels.",
        examples=("roles -A", "roles -n llm-prod -o wide", "roles -A -l team=research")),
    "setting": dict(
        help="status|on|off of the operator's Setting model-deployment-kv-cache-dtype-owned",
        description="The Setting gpustack-system/model-deployment-kv-cache-dtype-owned decides whether the "
                    "operator hands each Binding's dtype to the engine. Flipping it rolls every pool-attached "
                    "ModelDeployment.",
        examples=("setting status", "setting off --dry-run", "setting off --dry-run=server",
                  "setting on --yes --wait --timeout 2m")),
    "completion": dict(
        help="print a shell completion script (bash, zsh, fish, powershell)",
        description="Print a script that completes commands, flags, namespaces, Pods, Bindings and contexts "
                    "for the kubectl-kvcache executable in that shell. For `kubectl kvcache <TAB>` (kubectl "
                    "1.26+), put the kubectl_complete-kvcache executable on PATH instead: kubectl's own "
                    "completion then asks it (pip and krew installs provide it).",
        examples=("completion bash > ~/.local/share/bash-completion/completions/kubectl-kvcache",
                  "completion zsh > \"${fpath[1]}/_kubectl-kvcache\"",
                  "completion fish > ~/.config/fish/completions/kubectl-kvcache.fish",
                  "completion powershell >> $PROFILE")),
    "recover": dict(
        help="plan (or --apply) the guide's recovery of a rejected Binding",
        description="The upgrade guide's 'If new Pods fail argument parsing', planned from the cluster (or -f "
                    "files) and, with --apply, executed step by step: the Setting off, a new Binding on the same "
                    "pool with a spelling every engine accepts and a new domain, each ModelDeployment recreated "
                    "on it, opted-in workload templates re-pointed, the old Binding deleted, the Setting back on. "
                    "Without --apply it prints the plan and changes nothing.",
        examples=("recover sgl-fp8 -n llm-prod", "recover sgl-fp8 -n llm-prod --dtype fp8_e4m3 -o yaml",
                  "recover sgl-fp8 -n llm-prod --strategy replace", "recover sgl-fp8 -n llm-prod --apply",
                  "recover sgl-fp8 -n llm-prod --apply --backup-dir ./recover-sgl-fp8-20260310T0900Z")),
    "version": dict(
        help="print the plugin version",
        description="Print the plugin version (as --version does).",
        examples=("version",)),
}


def _wrap(text, width=100):
    """Each paragraph filled to `width` (the descriptions are raw text: the examples keep their lines)."""
    return "\n\n".join(textwrap.fill(" ".join(p.split()), width) for p in text.split("\n\n"))


def _examples(examples):
    return "Examples:\n" + "\n".join(f"  {PROG} {e}" for e in examples) + "\n"


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2, like kubectl, pointing at
    the help of the (sub)command that was being parsed."""

    def error(self, message):
        from kubectl_kvcache.render.core import escape   # the message may quote an argument

        if message.startswith("unrecognized arguments: "):
            extra = message[len("unrecognized arguments: "):]
            message = ("unknown flag: " if extra.startswith("-") else "unexpected argument: ") + extra
        self.exit(EXIT_ERROR, f"error: {escape(message)}\nSee '{self.prog} --help' for usage.\n")

    def parse_args(self, args=None, namespace=None):
        ns, extra = self.parse_known_args(args, namespace)
        if extra:   # argparse reports these from the top parser: report them from the subcommand's
            commands = getattr(self, "_commands", {})
            target = commands.get((getattr(ns, "command", None), getattr(ns, "action", None))) \
                or commands.get((getattr(ns, "command", None), None)) or self
            target.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns


def _command(sub, name, **extra):
    h = HELP[name]
    return sub.add_parser(name, help=h["help"], description=_wrap(h["description"]), epilog=_examples(h["examples"]),
                          formatter_class=argparse.RawDescriptionHelpFormatter, **extra)


def _connection_flags(p):
    g = p.add_argument_group("connection (as kubectl)")
    g.add_argument("--kubeconfig", help="path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    g.add_argument("--context", help="the kubeconfig context to use")
    g.add_argument("--cluster", help="the kubeconfig cluster to use")
    g.add_argument("--user", help="the kubeconfig user to use")
    g.add_argument("-s", "--server", help="the address of the Kubernetes API server")
    g.add_argument("--token", help="bearer token for authentication")
    g.add_argument("--certificate-authority", help="path to a CA file for the server's certificate")
    g.add_argument("--insecure-skip-tls-verify", action="store_true", help="do not verify the server's certificate")
    g.add_argument("--as", dest="as_user", help="username to impersonate")
    g.add_argument("--as-group", action="append", default=[], help="group to impersonate (repeatable)")
    g.add_argument("--as-uid", help="UID to impersonate")
    g.add_argument("--request-timeout", default="0",
                   help="time to wait for one request (e.g. 10s, 1m; 0 waits forever)")
    g.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE,
                   help="objects per page when listing (0 lists without paging)")


def _scope_flags(p, files=True, selects="objects"):
    p.add_argument("-n", "--namespace", help="namespace (default: the context's, else 'default')")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (wins over -n)")
    p.add_argument("-l", "--selector", help=f"label selector: only {selects} with these labels "
                                            f"(k=v, k!=v, k, !k, k in (a,b), k notin (a,b))")
    if files:
        p.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                       help="read saved objects (JSON or YAML; a file, a directory or '-') "
                            "instead of a cluster; repeatable")


def _assume_setting_flag(p):
    p.add_argument("--assume-setting", choices=("on", "off"),
                   help="judge as if the Setting were on/off, without reading it (e.g. when RBAC does not "
                        "let you read settings.gpustack.ai in gpustack-system, or to preview the upgrade)")


def _output_flags(p, formats=("table", "wide", "json", "yaml")):
    p.add_argument("-o", "--output", default="table", choices=formats, help="output format")
    if "table" in formats:
        p.add_argument("--no-headers", action="store_true", help="tables without the header row")


def _human_format(text):
    """`table`, kubectl's name for the lines a person reads; `text`, its name before, still accepted."""
    return "table" if text == "text" else text


def _skip_workloads_flag(p):
    p.add_argument("--skip-workloads", action="store_true",
                   help="do not list Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs (for "
                        "users RBAC does not let list them): their Pod templates' injection opt-ins are not checked")


SELECTS = {"verify": "Pods (ANDed with the plugin's own selectors)",
           "check": "findings about objects", "bindings": "Bindings",
           "roles": "roles of ModelDeployments"}


def build_parser(only=None):
    """The command tree; `only`: just that command's branch. A command line that names its command
    first parses nothing else, and building every branch costs ~10 ms of every start."""
    parser = _Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kubectl-kvcache {__version__}")
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND", parser_class=_Parser)
    commands = {}
    for name, add in BRANCHES.items():
        if only is None or name == only:
            add(sub, commands)
    parser._commands = commands
    return parser


def named_command(args):
    """The command a command line starts with, when it is one (build_parser(only=...))."""
    return args[0] if args and args[0] in BRANCHES else None


def _add_verify(sub, commands):
    """verify's flags."""
    v = commands[("verify", None)] = _command(sub, "verify")
    v.add_argument("pods", nargs="*", metavar="POD", help="only these Pods (in the namespace)")
    _scope_flags(v, selects=SELECTS["verify"])
    _assume_setting_flag(v)
    _output_flags(v)
    v.add_argument("--fail-on", metavar="STATUS,...",
                   help="statuses that make the exit code 1 (default: every status but OK), e.g. "
                        "REJECTED,MISMATCH,UNKNOWN to tolerate replicas that are still rolling")
    v.add_argument("-w", "--watch", action="store_true",
                   help="after the list, watch Pods and ModelDeployments and print a row whenever a "
                        "replica's verdict or state changes")
    v.add_argument("--wait", action="store_true",
                   help="block until every replica of every pool-attached ModelDeployment in scope runs its "
                        "expected value (exit 0); exit 1 as soon as one is confirmed REJECTED, or at --timeout")
    v.add_argument("--timeout", help=f"how long --wait waits (default {DEFAULT_ROLLOUT_TIMEOUT}) or --watch "
                                     f"watches (default: until interrupted), e.g. 30s, 10m; 0: no limit")
    _connection_flags(v)


def _add_check(sub, commands):
    """check's flags."""
    c = commands[("check", None)] = _command(sub, "check")
    _scope_flags(c, selects=SELECTS["check"])
    _assume_setting_flag(c)
    _output_flags(c)
    c.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    _skip_workloads_flag(c)
    _connection_flags(c)


def _add_bindings_or_roles(name, sub, commands):
    """bindings' or roles' flags."""
    b = commands[(name, None)] = _command(sub, name)
    _scope_flags(b, selects=SELECTS[name])
    _assume_setting_flag(b)
    _output_flags(b)
    if name == "bindings":
        _skip_workloads_flag(b)
    _connection_flags(b)


def _add_setting(sub, commands):
    """setting status|on|off."""
    s = commands[("setting", None)] = _command(sub, "setting")
    ssub = s.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    st = commands[("setting", "status")] = ssub.add_parser(
        "status", help="the Setting's current value", description=_wrap("The Setting's value (status.value; unset "
        "reads true), whether it is editable, its description and what it means. Exit 1 when status.value is not a "
        "value the operator accepts."), epilog=_examples(("setting status", "setting status -o json")),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    st.add_argument("-o", "--output", default="table", type=_human_format, choices=("table", "json", "yaml"),
                    help="output format (table: the lines a person reads)")
    _connection_flags(st)
    for name, word in (("on", "true"), ("off", "false")):
        a = commands[("setting", name)] = ssub.add_parser(
            name, help=f"set the Setting to \"{word}\" (shows what will roll first)",
            description=_wrap(f"Set spec.value to \"{word}\" with a JSON merge patch guarded by the object's "
                              f"resourceVersion, after showing what will roll. On a terminal it asks first "
                              f"(answering anything but y/yes cancels: nothing is changed, exit 1); without a "
                              f"terminal it needs --yes."),
            epilog=_examples((f"setting {name} --dry-run", f"setting {name} --dry-run=server",
                              f"setting {name}", f"setting {name} --yes --wait --timeout 2m")),
            formatter_class=argparse.RawDescriptionHelpFormatter)
        a.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
        a.add_argument("--dry-run", nargs="?", const="client", default="none",
                       choices=("none", "client", "server"),
                       help="client: print the patch and what would roll; server: let the API server "
                            "validate the patch without persisting it")
        a.add_argument("--field-manager", default=DEFAULT_FIELD_MANAGER, help="the field manager of the patch")
        a.add_argument("--wait", action="store_true", help="wait until status.value reports the new value")
        a.add_argument("--timeout", default=DEFAULT_WAIT_TIMEOUT, help="how long --wait waits (e.g. 30s, 2m)")
        if name == "on":
            a.add_argument("--force", action="store_true",
                           help="turn it on although check reports errors (the rollout will crash-loop or "
                                "refuse what they name)")
            _skip_workloads_flag(a)
        _connection_flags(a)


def _add_recover(sub, commands):
    """recover's flags."""
    rc = commands[("recover", None)] = _command(sub, "recover")
    rc.add_argument("binding", metavar="BINDING", help="the KVCachePoolBinding to recover from")
    rc.add_argument("-n", "--namespace", help="namespace (default: the context's, else 'default')")
    rc.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                    help="plan from saved objects instead of a cluster (not with --apply); repeatable")
    rc.add_argument("--dtype", help="the new Binding's dtype (default: check's suggestion, a spelling of the same "
                                    "format every receiving engine accepts)")
    rc.add_argument("--name", help="the new Binding's name (default: derived from the old name and the dtype)")
    rc.add_argument("--domain", help="the new Binding's spec.domain.name (default: derived; must be unclaimed "
                                     "on the pool)")
    rc.add_argument("--strategy", default="side-by-side", choices=("side-by-side", "replace"),
                    help="side-by-side (default): create each deployment under a new name, wait until it is "
                         "available, then delete the old one (needs spare capacity); replace: back up, "
                         "delete, wait until gone, create under the same name (downtime per deployment)")
    rc.add_argument("-o", "--output", default="table", type=_human_format, choices=("table", "json", "yaml"),
                    help="output format (table: the numbered steps with manifests a person reads)")
    rc.add_argument("--apply", action="store_true", help="execute the plan (asks first on a terminal)")
    rc.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    rc.add_argument("--dry-run", nargs="?", const="client", default="none", choices=("none", "client", "server"),
                    help="client: print the plan and the requests, send nothing; server: the API server "
                         "validates every create, patch and delete (dryRun=All), nothing persisted")
    rc.add_argument("--backup-dir", help="where objects are backed up before they are deleted or patched "
                                         "(default: a new directory named after the Binding and the time); "
                                         "pass an earlier run's to resume it")
    rc.add_argument("--timeout", default=DEFAULT_RECOVER_TIMEOUT,
                    help="how long each wait step waits (e.g. 10m; 0 waits forever)")
    rc.add_argument("--field-manager", default=DEFAULT_FIELD_MANAGER, help="the field manager of the writes")
    _connection_flags(rc)


def _add_completion(sub, commands):
    """completion's argument."""
    comp = commands[("completion", None)] = _command(sub, "completion")
    comp.add_argument("shell", choices=("bash", "zsh", "fish", "powershell"), help="the shell")


def _add_version(sub, commands):
    """version (no flags)."""
    commands[("version", None)] = _command(sub, "version")


BRANCHES = {"verify": _add_verify, "check": _add_check,
            "bindings": lambda sub, commands: _add_bindings_or_roles("bindings", sub, commands),
            "roles": lambda sub, commands: _add_bindings_or_roles("roles", sub, commands),
            "setting": _add_setting, "recover": _add_recover, "completion": _add_completion, "version": _add_version}


# -- Complete and Validate: flags -> options ----------------------------------------------------

def connection(ns) -> Connection:
    # --as-group/--as-uid without --as are judged with the kubeconfig's `as` (kube.py), as kubectl does
    conn = Connection(kubeconfig=ns.kubeconfig, context=ns.context, cluster=ns.cluster, user=ns.user,
                      server=ns.server, token=ns.token, certificate_authority=ns.certificate_authority,
                      insecure_skip_tls_verify=ns.insecure_skip_tls_verify, as_user=ns.as_user,
                      as_groups=tuple(ns.as_group), as_uid=ns.as_uid, request_timeout=ns.request_timeout,
                      chunk_size=ns.chunk_size)
    conn.timeout  # a bad --request-timeout fails before anything is sent
    if conn.chunk_size < 0:
        raise PluginError(f"--chunk-size must be 0 or more, not {conn.chunk_size}")
    return conn


def scope(ns, pods=(), workloads=False, selected=True) -> Scope:
    """-A wins over -n, as in kubectl. `selected`: whether -l narrows what is read (verify's Pods).
    Names and the namespace are validated as Kubernetes validates them, before any request."""
    namespace = None if ns.all_namespaces else ns.namespace
    if namespace is not None:
        names.valid_namespace(namespace)
    for name in pods:
        names.valid_name(name, "Pod")
    if ns.selector:
        label_selector.validate(ns.selector)      # a malformed selector fails before any request
    skipped = workloads and getattr(ns, "skip_workloads", False)
    return Scope(namespace=namespace, all_namespaces=ns.all_namespaces,
                 selector=ns.selector if selected else None,
                 names=tuple(pods), files=tuple(ns.filename), workloads=workloads and not skipped,
                 workloads_skipped=skipped, assume_setting={"on": True, "off": False}.get(ns.assume_setting))


def verify_options(ns) -> VerifyOptions:
    fail_on = ()        # every status but OK
    if ns.fail_on is not None:
        from kubectl_kvcache.judge.verify import STATUSES     # only then: verify loads while the lists are read

        words = [w.strip().upper() for w in ns.fail_on.split(",") if w.strip()]
        unknown = [w for w in words if w not in STATUSES]
        if unknown or not words:
            raise PluginError(f"--fail-on: {unknown[0] if unknown else ns.fail_on!r} is not a status (use a "
                              f"comma-separated list of {', '.join(STATUSES)})")
        fail_on = tuple(dict.fromkeys(words))
    if (ns.watch or ns.wait) and ns.filename:
        raise PluginError("--watch/--wait follow a live cluster: they cannot be used with -f/--filename")
    if (ns.watch or ns.wait) and ns.pods:
        raise PluginError("--watch/--wait follow every replica in scope: they cannot be used with POD names")
    if ns.wait and ns.selector:
        raise PluginError("--wait accounts for every replica of each deployment: it cannot be used with "
                          "-l/--selector")
    if ns.watch and ns.output in ("json", "yaml"):
        raise PluginError("--watch prints table rows: use -o table or -o wide (--wait -o json prints the "
                          "final report)")
    if ns.timeout is not None and not (ns.watch or ns.wait):
        raise PluginError("--timeout needs --wait or --watch")
    timeout = parse_duration(ns.timeout if ns.timeout is not None else
                             (DEFAULT_ROLLOUT_TIMEOUT if ns.wait else "0"), "--timeout")
    return VerifyOptions(connection(ns), scope(ns, pods=ns.pods), output(ns), fail_on=fail_on, watch=ns.watch,
                         wait=ns.wait, timeout=timeout)


def output(ns) -> Output:
    return Output(format=ns.output, headers=not getattr(ns, "no_headers", False))


def options_for(ns):
    """The command's module name and its validated options."""
    if ns.command == "verify":
        return "verify", verify_options(ns)
    if ns.command in ("check", "bindings", "roles"):
        # -l picks what is reported, not what is read: a Binding's users must all be judged
        return "check", CheckOptions(ns.command, connection(ns),
                                     scope(ns, workloads=ns.command != "roles", selected=False),
                                     output(ns), strict=getattr(ns, "strict", False), selector=ns.selector)
    if ns.command == "completion":
        return "completion", CompletionOptions(ns.shell)
    if ns.command == "recover":
        if ns.filename and (ns.apply or ns.dry_run != "none"):
            raise PluginError("--apply and --dry-run need a cluster: -f only plans")
        if ns.namespace is not None:
            names.valid_namespace(ns.namespace)
        for what, name in (("Binding", ns.binding), ("new Binding", ns.name)):
            if name is not None:
                names.valid_name(name, what)
        return "recover", RecoverOptions(
            ns.binding, connection(ns), Scope(namespace=ns.namespace, files=tuple(ns.filename)),
            Output(format=ns.output), dtype=ns.dtype, name=ns.name, domain=ns.domain, strategy=ns.strategy,
            apply=ns.apply, yes=ns.yes, dry_run=ns.dry_run, backup_dir=ns.backup_dir,
            timeout=parse_duration(ns.timeout, "--timeout"), field_manager=ns.field_manager)
    if ns.action == "status":
        return "setting", SettingOptions("status", connection(ns), Output(format=ns.output))
    return "setting", SettingOptions(ns.action, connection(ns), yes=ns.yes, dry_run=ns.dry_run,
                                     field_manager=ns.field_manager, wait=ns.wait,
                                     timeout=parse_duration(ns.timeout, "--timeout"),
                                     force=getattr(ns, "force", False),
                                     skip_workloads=getattr(ns, "skip_workloads", False))


COMMANDS = {"verify": "kubectl_kvcache.commands.verify", "check": "kubectl_kvcache.commands.check",
            "setting": "kubectl_kvcache.commands.setting", "recover": "kubectl_kvcache.commands.recover",
            "completion": "kubectl_kvcache.commands.completion"}


def completion_spec(parser=None):
    """The command tree as plain data for completion (nothing below cli.py sees argparse)."""
    from kubectl_kvcache.completion import Flag, Node

    spec = {}

    def walk(p, path):
        subcommands, flags, positionals, repeat = {}, [], [], False
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help or "" for a in action._choices_actions}
                for name, child in action.choices.items():
                    subcommands[name] = helps.get(name, "")
                    walk(child, path + (name,))
            elif action.option_strings:
                if action.help == argparse.SUPPRESS:
                    continue
                value = "none" if action.nargs == 0 else ("optional" if action.nargs == "?" else "required")
                flags.append(Flag(tuple(action.option_strings), action.dest, value,
                                  tuple(action.choices or ()), (action.help or "").split(" (")[0]))
            else:
                positionals.append((action.metavar or action.dest.upper(), tuple(action.choices or ())))
                repeat = action.nargs in ("*", "+")
        spec[path] = Node(subcommands, tuple(flags), tuple(positionals), repeat)

    walk(parser or build_parser(), ())
    return spec


def run(entry=None):
    """The executables' entry point (console scripts, bin/, the binary, `python -m`): main() (or
    `entry`), then out. Output is flushed here; when nothing is registered to run at exit and no
    other non-daemon thread runs, the interpreter's teardown (freeing every module and object,
    ~8 ms of a 100-Pod verify) is skipped, as a compiled CLI ends. Otherwise (the kubernetes
    client's temporary files, say) the normal exit runs it."""
    import atexit
    import threading

    code = (entry or main)()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:     # the reader went away: as main() treats it, and no second report
        code = code or EXIT_ERROR
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    pending = getattr(atexit, "_ncallbacks", lambda: 1)()
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    if not pending and not others:
        os._exit(code or 0)
    sys.exit(code)


def run_complete():
    """The `kubectl_complete-kvcache` executable's entry point: complete() through run()."""
    run(complete)


def complete(argv=None):
    """The `kubectl_complete-kvcache` executable: kubectl (1.26+) runs it with the words typed
    after `kubectl kvcache`, the last one being completed."""
    return main(["__complete"] + completion_words(sys.argv[1:] if argv is None else argv))


def completion_words(words):
    from kubectl_kvcache.completion import strip_protocol

    return strip_protocol(words)


def _tracer(err):
    """render.tracer(err), with render imported only when a request is traced (KVCACHE_TRACE)."""
    def trace(text):
        from kubectl_kvcache import render

        render.tracer(err)(text)
    return trace


def main(argv=None, stdin=None, stdout=None, stderr=None):
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    args = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(None if args[:1] == ["__complete"] else named_command(args))
    if args and args[0] == "__complete":     # cobra's hidden command: the shell scripts and kubectl ask it
        from kubectl_kvcache.commands import IO, completion as complete_command

        try:
            return complete_command.complete(completion_spec(parser), args[1:],
                                             IO(stdin=stdin, stdout=stdout, stderr=stderr))
        except BrokenPipeError:
            return EXIT_ERROR
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            ns = parser.parse_args(args)
    except SystemExit as exc:  # argparse exits for --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    if ns.command is None:
        parser.print_help(stdout)
        return EXIT_OK
    if ns.command == "version" or (ns.command == "setting" and ns.action is None):
        from kubectl_kvcache import render

        if ns.command == "version":
            render.line(stdout, f"kubectl-kvcache {__version__}")
            return EXIT_OK
        render.error(stderr, "setting needs an action: status, on or off")
        render.line(stderr, f"See '{PROG} setting --help' for usage.")
        return EXIT_ERROR
    try:
        name, options = options_for(ns)
        if argv is None and not getattr(getattr(options, "scope", None), "files", ()):
            # a real command line (tests pass argv): connect, and read what the command reads first,
            # while the command's modules (render included) load
            from kubectl_kvcache.load import reader

            first = options.prefetch_scope() if isinstance(options, (VerifyOptions, CheckOptions)) else None
            reader.warm(options.connection, _tracer(stderr), first)
        from kubectl_kvcache import render
        from kubectl_kvcache.commands import IO

        return importlib.import_module(COMMANDS[name]).run(options, IO(stdin=stdin, stdout=stdout, stderr=stderr))
    except PluginError as exc:
        from kubectl_kvcache import render

        render.error(stderr, str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        from kubectl_kvcache import render

        render.error(stderr, "interrupted")
        return exitcodes.INTERRUPTED
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("KVCACHE_DEBUG"):
            raise
        from kubectl_kvcache import render

        render.error(stderr, f"internal error: {exc.__class__.__name__}: {exc} (set KVCACHE_DEBUG=1 for the "
                             f"traceback; please report it)")
        return EXIT_ERROR
