"""`admission`: a ValidatingAdmissionPolicy that refuses, at the API server, a KVCachePoolBinding
whose dtype the engine releases on its pool reject and a ModelDeployment whose engine release
rejects its Binding's dtype (judge/admission.py builds it; flows/admission.py reads and prints)."""

from __future__ import annotations

from kubectl_kvcache.cli import connection_flags, flags
from kubectl_kvcache.cli.options import AdmissionOptions

NAME = "admission"
ACTIONS = ("Deny", "Warn", "Audit")     # admissionregistration.k8s.io/v1 validationActions
HELP = dict(
    help="a ValidatingAdmissionPolicy refusing dtypes the engines in use reject, for kubectl apply",
    description="Print two ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, CEL) and their "
                "bindings, as a List for `kubectl apply -f -`: one refuses a new KVCachePoolBinding whose "
                "spec.domain.dtype an engine release on its pool (or already naming it) rejects, the other a "
                "ModelDeployment whose spec.engine.version rejects its Binding's dtype. The accepted spellings "
                "are the engine data's (the `engines` command's); which releases run on each pool and each "
                "Binding's dtype are read now, from the cluster or -f files, and written into the policy: "
                "generate it again when they change (docs/admission.md says what it cannot see). Roll out "
                "with --validation-actions Warn or Audit before Deny.\n\n"
                "-n NAMESPACE reads one namespace and binds the policies to it; -A reads every namespace and "
                "binds them to all. -o yaml (the default) or json.",
    examples=("admission -A | kubectl apply -f -", "admission -A --validation-actions Warn",
              "admission -n llm-prod --validation-actions Warn,Audit -o json", "admission -A -f saved.json"))


def add(sub, commands):
    p = commands[(NAME, None)] = flags.command(sub, NAME, HELP["help"], HELP["description"], HELP["examples"])
    flags.engine_data_flag(p)
    p.add_argument("-n", "--namespace", help="namespace read, and the one the policies judge "
                                             "(default: the context's, else 'default')")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace (wins over -n)")
    p.add_argument("-f", "--filename", action="append", default=[], metavar="PATH",
                   help="read saved objects (JSON or YAML; a file, a directory or '-') instead of a cluster; "
                        "repeatable")
    p.add_argument("--validation-actions", action="append", default=[], metavar="ACTION",
                   help="what the bindings do with a refusal: Deny (default), Warn, Audit; comma-separated or "
                        "repeated (Deny and Warn not together, as the API server requires)")
    flags.output_flag(p, NAME)
    p.set_defaults(output="yaml")
    connection_flags.add(p)


def actions(given) -> tuple[str, ...]:
    """--validation-actions, checked as the API server checks them, before any request."""
    from kubectl_kvcache.errors import PluginError

    chosen: list[str] = []
    for word in (w.strip() for text in given for w in text.split(",")):
        match = next((a for a in ACTIONS if a.lower() == word.lower()), None)
        if match is None:
            raise PluginError(f"--validation-actions: {word!r} is not one of {', '.join(ACTIONS)}")
        if match not in chosen:
            chosen.append(match)
    if "Deny" in chosen and "Warn" in chosen:
        raise PluginError("--validation-actions: Deny and Warn cannot be used together (Deny already tells the "
                          "client why)")
    return tuple(chosen) or ("Deny",)


def options(ns):
    ns.selector, ns.assume_setting = None, None    # flags.scope's; this command reads neither
    return AdmissionOptions(connection_flags.connection(ns), flags.scope(ns, selected=False), ns.output,
                            actions(ns.validation_actions))


def prefetch(options: AdmissionOptions):
    return options.scope


def run(options: AdmissionOptions, io) -> int:
    from kubectl_kvcache.cli.flows import admission as flow

    return flow.run(options, io)
