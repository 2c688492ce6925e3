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

from kubectl_kvcache import __version__, exitcodes
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.options import (DEFAULT_CHUNK_SIZE, DEFAULT_FIELD_MANAGER, DEFAULT_WAIT_TIMEOUT, CheckOptions,
                                     Connection, Output, Scope, SettingOptions, VerifyOptions, parse_duration)

PROG = "kubectl kvcache"
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = exitcodes.OK, exitcodes.FINDINGS, exitcodes.ERROR

DESCRIPTION = """\
What --kv-cache-dtype every vLLM and SGLang engine of the GPUStack Operator will really run
with, judged against its KVCachePoolBinding, before and after the upgrade that makes the
Binding's dtype the engine's argument.

Commands:
  verify     the effective dtype of every pool-attached engine container, against its Binding
  check      everything the upgrade guide asks you to check before turning the Setting on
  bindings   every KVCachePoolBinding with its dtype, the engines that use it and a verdict
  roles      roles that pass --kv-cache-dtype themselves, and take-over roles, on pools
  setting    status|on|off of the operator's Setting model-deployment-kv-cache-dtype-owned
  version    print the plugin version

Exit codes: 0 all good, 1 findings (something is not OK), 2 the plugin could not do its job.
"""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2, like kubectl."""

    def error(self, message):
        self.exit(EXIT_ERROR, f"error: {message}\nSee '{self.prog} --help' for usage.\n")


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


def _scope_flags(p, files=True):
    p.add_argument("-n", "--namespace", help="namespace (default: the context's, else 'default')")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")
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


def build_parser():
    parser = _Parser(prog=PROG, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kubectl-kvcache {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    v = sub.add_parser("verify", help="effective dtype of every pool-attached engine container",
                       description="For each pool-attached engine container: the --kv-cache-dtype the engine "
                                   "will run with (parsed as that engine version parses its argv), against "
                                   "its Binding. Naming PODs also prints their argv with every occurrence "
                                   "marked.\n\nStatus: OK, MISMATCH, MISSING (not rolled yet), REJECTED "
                                   "(the engine exits on its arguments), UNKNOWN (cannot be decided, with why).",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("pods", nargs="*", metavar="POD", help="only these Pods (in the namespace)")
    _scope_flags(v)
    v.add_argument("-l", "--selector", help="label selector, ANDed with the plugin's own")
    _assume_setting_flag(v)
    _output_flags(v)
    _connection_flags(v)

    c = sub.add_parser("check", help="pre-upgrade findings",
                       description="Everything the upgrade guide asks you to check before the Setting is on: "
                                   "Binding spellings against their engines, roles that pass the flag "
                                   "themselves, take-over roles, injection opt-ins the webhook will refuse, "
                                   "and the Setting.")
    _scope_flags(c)
    _assume_setting_flag(c)
    _output_flags(c)
    c.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    _connection_flags(c)

    b = sub.add_parser("bindings", help="every Binding with its dtype, engines and verdict")
    _scope_flags(b)
    _assume_setting_flag(b)
    _output_flags(b)
    _connection_flags(b)

    r = sub.add_parser("roles", help="roles on pools that pass the flag themselves, and take-over roles")
    _scope_flags(r)
    _assume_setting_flag(r)
    _output_flags(r)
    _connection_flags(r)

    s = sub.add_parser("setting", help="status|on|off of the operator's Setting",
                       description="The Setting gpustack-system/model-deployment-kv-cache-dtype-owned decides "
                                   "whether the operator hands each Binding's dtype to the engine. Flipping it "
                                   "rolls every pool-attached ModelDeployment.")
    ssub = s.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    st = ssub.add_parser("status", help="the Setting's current value")
    st.add_argument("-o", "--output", default="text", choices=("text", "json", "yaml"), help="output format")
    _connection_flags(st)
    for name, word in (("on", "true"), ("off", "false")):
        a = ssub.add_parser(name, help=f"set the Setting to \"{word}\" (shows what will roll first)")
        a.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
        a.add_argument("--dry-run", nargs="?", const="client", default="none",
                       choices=("none", "client", "server"),
                       help="client: print the patch and what would roll; server: let the API server "
                            "validate the patch without persisting it")
        a.add_argument("--field-manager", default=DEFAULT_FIELD_MANAGER, help="the field manager of the patch")
        a.add_argument("--wait", action="store_true", help="wait until status.value reports the new value")
        a.add_argument("--timeout", default=DEFAULT_WAIT_TIMEOUT, help="how long --wait waits (e.g. 30s, 2m)")
        _connection_flags(a)

    sub.add_parser("version", help="print the plugin version")
    return parser


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


_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def valid_namespace(name) -> str:
    """A namespace as Kubernetes validates it (a DNS-1123 label), before any request names it."""
    if not (_DNS1123_LABEL.fullmatch(name) and len(name) <= 63):
        raise PluginError(f"invalid namespace {name!r}: a namespace is a lowercase RFC 1123 label (at most 63 "
                          f"characters of a-z, 0-9 and '-', starting and ending with a letter or digit)")
    return name


def valid_pod_name(name) -> str:
    """A Pod name as Kubernetes validates it (a DNS-1123 subdomain): never a path, a query or a
    subresource."""
    if not (_DNS1123_SUBDOMAIN.fullmatch(name) and len(name) <= 253):
        raise PluginError(f"invalid Pod name {name!r}: a Pod name is a lowercase RFC 1123 subdomain (at most 253 "
                          f"characters of a-z, 0-9, '-' and '.', each part starting and ending with a letter or "
                          f"digit)")
    return name


def scope(ns, names=(), workloads=False) -> Scope:
    if ns.all_namespaces and ns.namespace:
        raise PluginError("-n/--namespace and -A/--all-namespaces cannot be used together")
    if ns.namespace is not None:
        valid_namespace(ns.namespace)
    for name in names:
        valid_pod_name(name)
    return Scope(namespace=ns.namespace, all_namespaces=ns.all_namespaces, selector=getattr(ns, "selector", None),
                 names=tuple(names), files=tuple(ns.filename), workloads=workloads,
                 assume_setting={"on": True, "off": False}.get(ns.assume_setting))


def output(ns) -> Output:
    return Output(format=ns.output, headers=not getattr(ns, "no_headers", False))


def options_for(ns):
    """The command's module name and its validated options."""
    if ns.command == "verify":
        return "verify", VerifyOptions(connection(ns), scope(ns, names=ns.pods), output(ns))
    if ns.command in ("check", "bindings", "roles"):
        return "check", CheckOptions(ns.command, connection(ns), scope(ns, workloads=ns.command != "roles"),
                                     output(ns), strict=getattr(ns, "strict", False))
    if ns.action == "status":
        return "setting", SettingOptions("status", connection(ns), Output(format=ns.output))
    return "setting", SettingOptions(ns.action, connection(ns), yes=ns.yes, dry_run=ns.dry_run,
                                     field_manager=ns.field_manager, wait=ns.wait,
                                     timeout=parse_duration(ns.timeout, "--timeout"))


COMMANDS = {"verify": "kubectl_kvcache.commands.verify", "check": "kubectl_kvcache.commands.check",
            "setting": "kubectl_kvcache.commands.setting"}


def main(argv=None, stdin=None, stdout=None, stderr=None):
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            ns = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits for --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    from kubectl_kvcache import render

    if ns.command is None:
        parser.print_help(stdout)
        return EXIT_OK
    if ns.command == "version":
        render.line(stdout, f"kubectl-kvcache {__version__}")
        return EXIT_OK
    if ns.command == "setting" and ns.action is None:
        render.error(stderr, f"setting needs an action: status, on or off\nSee '{PROG} setting --help' for usage.")
        return EXIT_ERROR
    try:
        name, options = options_for(ns)
        if argv is None and not getattr(getattr(options, "scope", None), "files", ()):
            # a real command line (tests pass argv): connect while the command's modules load
            from kubectl_kvcache import sources

            sources.warm(options.connection, render.tracer(stderr))
        from kubectl_kvcache.commands import IO

        return importlib.import_module(COMMANDS[name]).run(options, IO(stdin=stdin, stdout=stdout, stderr=stderr))
    except PluginError as exc:
        render.error(stderr, str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        render.error(stderr, "interrupted")
        return exitcodes.INTERRUPTED
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("KVCACHE_DEBUG"):
            raise
        render.error(stderr, f"internal error: {exc.__class__.__name__}: {exc} (set KVCACHE_DEBUG=1 for the "
                             f"traceback; please report it)")
        return EXIT_ERROR
