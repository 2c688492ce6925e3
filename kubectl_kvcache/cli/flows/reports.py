"""--apply-reports: the reports -o policyreport (or -o openreports) printed, kept in the cluster.
Each report is server-side applied (kube/client.apply: PATCH application/apply-patch+yaml, field
manager kubectl-kvcache, forced as the Kubernetes documentation asks of a controller for the
objects it owns and manages (Server-Side Apply, "Using Server-Side Apply in a controller"): the
fields the report sets (its results, summary, its own labels) are the plugin's, taken back if
someone changed them; every field it does not set (another manager's labels, annotations) stays), then the reports of the same command (found by
their labels, render/formats/policyreport.selector) in the scope the run read that this run did
not write are deleted, each with its uid as precondition: a namespace with nothing to report any
more loses its stale report, so the reports are replaced, never piled up.

As every write of the plugin: what will change is shown first (stderr: stdout holds the
reports), asked on a terminal or taken with --yes, `--dry-run=client` sends no write,
`--dry-run=server` sends each with dryRun=All. A write that fails is one `error:` line and exit 2
(the run could not do its job); otherwise the exit code stays the verdict's."""

from __future__ import annotations

from kubectl_kvcache import render
from kubectl_kvcache.errors import Forbidden, NotFound, PluginError
from kubectl_kvcache.kube.connection import DEFAULT_FIELD_MANAGER
from kubectl_kvcache.render import formats
from kubectl_kvcache.render.formats import policyreport

FIELD_MANAGER = DEFAULT_FIELD_MANAGER


def _path(form, namespace, name=None, everywhere=False):
    """A report's path (kube/client.py builds it): a namespace's, the cluster's, or (`everywhere`)
    the namespaced kind's in all namespaces."""
    from kubectl_kvcache.kube import client as kube

    group, version = form.api_version.split("/")
    plural = form.plural if namespace or everywhere else form.cluster_plural
    if name:
        return kube.object_path(group, version, plural, namespace, name)
    return kube.collection_path(group, version, plural, namespace)


def _resource(form, namespace) -> str:
    """As kubectl names it in its lines: `policyreport.wgpolicyk8s.io`."""
    return f"{(form.kind if namespace else form.cluster_kind).lower()}.{form.group}"


def _where(namespace) -> str:
    return f" -n {namespace}" if namespace else ""


def _crd_served(client, form):
    """A missing CRD is one line naming it, before anything is written."""
    group, version = form.api_version.split("/")
    try:
        served = client.served(group)
    except NotFound:
        served = {"versions": {}}
    have = served["versions"].get(version, set())
    for plural in (form.plural, form.cluster_plural):
        if plural not in have:
            raise PluginError(f"the API server does not serve {plural}.{group}/{version}: its CRD is not installed "
                              f"(the published CRDs are in deploy/crds/; Kyverno installs them too)")


def _stale(client, form, command, namespace, everywhere, written):
    """The reports `command` wrote before, in the scope read, that this run did not write."""
    found = []
    paths = []
    if everywhere:
        paths.append((_path(form, None, everywhere=True), True))
        paths.append((_path(form, None), False))
    else:
        paths.append((_path(form, namespace), True))
    for path, namespaced in paths:
        kind = form.plural if namespaced else form.cluster_plural
        items = client.list(path, lambda o: o, selector=policyreport.selector(command),
                            what=f"list {kind}.{form.group}" + (" in all namespaces" if everywhere and namespaced
                                                                 else _where(namespace) if namespaced else ""))
        for obj in items:
            meta = obj.get("metadata") or {}
            key = (meta.get("namespace") if namespaced else None, meta.get("name"))
            if key not in written:
                found.append((key[0], key[1], meta.get("uid")))
    return found


def _confirm(io, question) -> bool:
    from kubectl_kvcache.cli.flows.asking import cannot_ask

    unasked = cannot_ask(io)
    if unasked:
        raise PluginError(f"refusing to write the reports without confirmation: {unasked}; pass --yes to confirm "
                          f"(or --dry-run to preview)")
    render.prompt(io.stderr, question)
    answer = io.stdin.readline()
    if not answer:
        render.line(io.stderr)
    return answer.strip().lower() in ("y", "yes")


def _counts(obj) -> str:
    s = obj["summary"]
    said = ", ".join(f"{s[k]} {k}" for k in policyreport.RESULTS if s[k])
    return f"{len(obj['results'])} results" + (f": {said}" if said else "")


def publish(publish_options, doc, output_format, namespace, everywhere, client, io) -> bool:
    """Apply the reports of `doc` in the form of `output_format` and delete the stale ones.
    `namespace`: the one the run read (None with -A, `everywhere`). False when declined."""
    printer = formats.printer(output_format)
    form = printer.FORM
    objs = printer.reports(doc)
    command = doc.command
    dry = publish_options.dry_run
    _crd_served(client, form)
    written = {(o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs}
    stale = _stale(client, form, command, namespace, everywhere, written)
    suffix = {"client": " (dry run)", "server": " (server dry run)"}.get(dry, "")
    for o in objs:
        ns = o["metadata"].get("namespace")
        render.line(io.stderr, f"apply {_resource(form, ns)}/{o['metadata']['name']}{_where(ns)} "
                               f"({_counts(o)}){suffix}")
    for ns, name, _ in stale:
        render.line(io.stderr, f"delete {_resource(form, ns)}/{name}{_where(ns)} (stale: not written by this run)"
                               f"{suffix}")
    if dry == "client":
        return True
    if dry == "none" and not publish_options.yes:
        if not _confirm(io, f"Apply {len(objs)} and delete {len(stale)} {form.kind} objects? [y/N] "):
            render.line(io.stderr, "nothing was written")
            return False
    for o in objs:
        ns, name = o["metadata"].get("namespace"), o["metadata"]["name"]
        what = f"apply {_resource(form, ns)} {name}{_where(ns)}"
        try:
            client.apply(_path(form, ns, name), o, FIELD_MANAGER, force=True, dry_run=dry == "server", what=what)
        except Forbidden as exc:
            raise Forbidden(f"{exc} (needs RBAC verbs patch and create on {form.plural if ns else form.cluster_plural}."
                            f"{form.group})") from exc
        render.line(io.stderr, f"{_resource(form, ns)}/{name} serverside-applied{_where(ns)}{suffix}")
    for ns, name, uid in stale:
        what = f"delete {_resource(form, ns)} {name}{_where(ns)}"
        try:
            client.delete(_path(form, ns, name), uid=uid, dry_run=dry == "server", what=what)
        except NotFound:        # gone meanwhile: what was asked for
            pass
        render.line(io.stderr, f"{_resource(form, ns)}/{name} deleted{_where(ns)}{suffix}")
    return True


def run(options, view, report, output, snapshot, code, io) -> int:
    """After the reports were printed: keep them in the cluster. The verdict's `code`, or 2 with
    one `error:` line when a write fails (stdout already holds the reports: nothing more there)."""
    from kubectl_kvcache import exitcodes
    from kubectl_kvcache.load import reader
    from kubectl_kvcache.render.report import document

    doc = document(view, report, output.subject)
    try:
        client = reader.open_client(options.connection, render.tracer(io.stderr))
        publish(options.publish, doc, output.format, snapshot.namespace, options.scope.all_namespaces, client, io)
    except PluginError as exc:
        render.error(io.stderr, str(exc))
        return exitcodes.ERROR
    return code
