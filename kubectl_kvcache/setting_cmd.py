"""`kubectl kvcache setting status|on|off`: read the operator's Setting, or flip it.

The flow (I/O) lives here; what it judges (values, blast radius, the patch, the reverse command)
is in setting.py. Results go to stdout, prompts and diagnostics to stderr.
"""

import json
import time

from kubectl_kvcache import setting as st
from kubectl_kvcache import snapshot as snap
from kubectl_kvcache.errors import Conflict, Forbidden, NotFound, PluginError

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

RESOURCE = f"settings.{snap.SETTING_GROUP}"
WHERE = f"in namespace {snap.SETTING_NAMESPACE}"
POLL_SECONDS = 1.0
WEBHOOK_NOTE = ("the operator's webhooks pick the change up within about 30 s (they cache the value), and "
                "each pool-attached ModelDeployment rolls at its next reconcile")


def run(opts, io):
    from kubectl_kvcache import sources

    if opts.action == "status":
        return run_status(sources.open_client(opts, io), opts, io)
    want = st.ACTIONS[opts.action]
    timeout = _wait_timeout(opts)          # a bad --timeout fails before anything is sent
    return run_toggle(sources.open_client(opts, io), opts, io, want, timeout)


# -- reading ----------------------------------------------------------------------------------

def setting_path(client) -> str:
    """The Setting's path, its API version resolved through discovery (never hard-coded)."""
    from kubectl_kvcache.kube import collection_path

    try:
        version = client.resource_version_for(snap.SETTING_GROUP, "settings")
    except NotFound as exc:
        raise NotFound(f"the Setting API ({RESOURCE}) is not served by this cluster: {exc}")
    return f"{collection_path(snap.SETTING_GROUP, version, 'settings', snap.SETTING_NAMESPACE)}/{snap.SETTING_NAME}"


def read_setting(client, path):
    """The Setting object as JSON, or None when it does not exist."""
    try:
        return client.get(path, what=f"get {RESOURCE} {snap.SETTING_NAME} {WHERE}")
    except NotFound:
        return None


def run_status(client, opts, io):
    obj = read_setting(client, setting_path(client))
    record = snap.default_setting() if obj is None else snap.setting_record(obj, "cluster")
    view = st.status_view(record)
    if opts.output in ("json", "yaml"):
        from kubectl_kvcache import render

        render.structured(view, opts.output, io.stdout)
    else:
        for line in st.status_lines(record):
            print(line, file=io.stdout)
    if view["value"] is None:
        print(f"note: status.value {view['raw']!r} is not a value the operator accepts", file=io.stderr)
        return EXIT_FINDINGS
    return EXIT_OK


# -- flipping ---------------------------------------------------------------------------------

def _wait_timeout(opts):
    from kubectl_kvcache.kube import parse_duration

    return parse_duration(getattr(opts, "timeout", "60s"), "--timeout")


def run_toggle(client, opts, io, want, timeout=None, sleep=time.sleep, clock=time.monotonic):
    path = setting_path(client)
    obj = read_setting(client, path)
    if obj is None:
        raise NotFound(f"the Setting {snap.SETTING_NAMESPACE}/{snap.SETTING_NAME} does not exist; Settings cannot "
                       f"be created, the GPUStack Operator provides it: is the operator installed?")
    record = snap.setting_record(obj, "cluster")
    decision = st.decide(record, want)
    if decision == st.NOT_EDITABLE:
        raise PluginError(f"the Setting {snap.SETTING_NAMESPACE}/{snap.SETTING_NAME} is not editable "
                          f"(status.editable is false); nothing was changed")
    if decision == st.ALREADY:
        print(f"The Setting is already {st.action_for(want)} (status.value {record.status_value or 'unset: default'}"
              f"); nothing to change.", file=io.stdout)
        return EXIT_OK
    for line in st.blast_radius_lines(count_blast_radius(client, opts), want):
        print(line, file=io.stdout)
    if not record.resource_version:
        raise PluginError(f"the Setting {snap.SETTING_NAMESPACE}/{snap.SETTING_NAME} came without a "
                          f"metadata.resourceVersion: the change cannot be guarded against a concurrent one")
    body = st.patch_body(record.resource_version, want)
    if opts.wait and opts.dry_run != "none":
        print("note: --wait has no effect with --dry-run", file=io.stderr)
    if opts.dry_run == "client":
        return _show_client_dry_run(path, body, opts, io)
    if opts.dry_run == "server":
        return _server_dry_run(client, path, body, opts, io, want)
    if not opts.yes:
        confirm(io, want)
    patched = _patch(client, path, body, opts, dry_run=False)
    return _report(client, path, patched, record, opts, io, want, timeout, sleep, clock)


def count_blast_radius(client, opts) -> st.BlastRadius:
    """Pool-attached ModelDeployments and injection Pods in every namespace (paged lists). A list
    that is forbidden or not served leaves its count unknown, with why, instead of failing."""
    from kubectl_kvcache.kube import collection_path

    chunk = getattr(opts, "chunk_size", 500)
    deployments, md_why = None, ""
    try:
        version = client.resource_version_for(snap.GROUP, "modeldeployments")
        deployments = client.list(collection_path(snap.GROUP, version, "modeldeployments"), _attached_only,
                                  chunk=chunk, what=f"list modeldeployments.{snap.GROUP} in all namespaces")
    except (Forbidden, NotFound) as exc:
        md_why = str(exc)
    pods, pods_why = None, ""
    try:
        pods = client.list(collection_path("", "v1", "pods"), snap.pod_record, selector=f"{snap.INJECT_LABEL}=true",
                           chunk=chunk, what="list pods in all namespaces")
    except (Forbidden, NotFound) as exc:
        pods_why = str(exc)
    return st.blast_radius(deployments, pods, md_why, pods_why)


def _attached_only(obj):
    record = snap.deployment_record(obj)
    return record if record.kv_cache else None


def confirm(io, want):
    """Ask on the terminal (prompt on stderr); without one, refuse: --yes is the only way."""
    isatty = getattr(io.stdin, "isatty", None)
    if not (isatty and isatty()):
        raise PluginError(f"refusing to turn the Setting {st.action_for(want)} without confirmation: standard "
                          f"input is not a terminal; pass --yes to confirm (or --dry-run to preview)")
    print(f"Turn the Setting {st.action_for(want)}? [y/N] ", end="", file=io.stderr, flush=True)
    answer = io.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise PluginError("aborted: the Setting was not changed")


def _patch(client, path, body, opts, dry_run):
    what = f"patch {RESOURCE} {snap.SETTING_NAME} {WHERE}"
    try:
        return client.patch_merge(path, body, field_manager=opts.field_manager, dry_run=dry_run, what=what)
    except Conflict:
        raise Conflict(f"conflict: the Setting {snap.SETTING_NAMESPACE}/{snap.SETTING_NAME} changed since it was "
                       f"read (resourceVersion {body['metadata']['resourceVersion']}); nothing was overwritten: "
                       f"re-run to see the new state")
    except Forbidden as exc:
        raise Forbidden(f"{exc} (needs RBAC verb patch on {RESOURCE} {WHERE})")


def _show_client_dry_run(path, body, opts, io):
    print("Dry run (client): nothing was sent. The patch would be:", file=io.stdout)
    print(f"  PATCH {path}?fieldManager={opts.field_manager}", file=io.stdout)
    print("  Content-Type: application/merge-patch+json", file=io.stdout)
    print(f"  {json.dumps(body)}", file=io.stdout)
    return EXIT_OK


def _server_dry_run(client, path, body, opts, io, want):
    result = _patch(client, path, body, opts, dry_run=True)
    spec_value = (result.get("spec") or {}).get("value")
    print(f"Dry run (server): the API server accepted the patch (spec.value {spec_value!r}); nothing was "
          f"persisted.", file=io.stdout)
    if st.parse_bool(spec_value) != want:
        raise PluginError(f"the API server's dry run answered spec.value {spec_value!r}, not "
                          f"{st.WORD[want]!r}")
    return EXIT_OK


def _report(client, path, patched, before, opts, io, want, timeout, sleep, clock):
    meta = patched.get("metadata") or {}
    print(f"Setting {snap.SETTING_NAMESPACE}/{snap.SETTING_NAME} patched: spec.value {st.WORD[want]!r} "
          f"(resourceVersion {before.resource_version} -> {meta.get('resourceVersion', '?')}).", file=io.stdout)
    now = snap.setting_record(patched, "cluster")
    if opts.wait and st.effective_value(now) != want:
        limit = "no time limit" if timeout is None else f"up to {_seconds(timeout)}"
        print(f"Waiting for status.value to report {st.WORD[want]!r} ({limit})...", file=io.stderr)
        now = wait_for(client, path, want, timeout, sleep, clock)
    reported = st.effective_value(now)
    if reported == want:
        print(f"status.value reports {now.status_value or 'unset'} ({st.action_for(want)}); {WEBHOOK_NOTE}.",
              file=io.stdout)
    else:
        print(f"status.value still reports {now.status_value or 'unset (default true)'}: the operator has not "
              f"acted on it yet; {WEBHOOK_NOTE}. Pass --wait to wait for it.", file=io.stdout)
    print(f"To undo: {st.reverse_command(not want, opts)}", file=io.stdout)
    if getattr(opts, "token", None):
        print(f"note: the undo command reads the token from ${st.TOKEN_VARIABLE}", file=io.stderr)
    return EXIT_OK


def wait_for(client, path, want, timeout, sleep=time.sleep, clock=time.monotonic):
    """Poll status.value until it reports `want`; a PluginError when `timeout` (seconds, None:
    forever) passes first."""
    deadline = None if timeout is None else clock() + timeout
    while True:
        obj = read_setting(client, path)
        if obj is None:
            raise NotFound(f"the Setting {snap.SETTING_NAMESPACE}/{snap.SETTING_NAME} disappeared while waiting")
        record = snap.setting_record(obj, "cluster")
        if st.effective_value(record) == want:
            return record
        if deadline is not None and clock() >= deadline:
            raise PluginError(f"timed out after {_seconds(timeout)} waiting for status.value to report "
                              f"{st.WORD[want]!r} (it reports {record.status_value or 'unset'}); spec.value is "
                              f"set, so the operator may still act on it: check it with "
                              f"'kubectl kvcache setting status'")
        sleep(POLL_SECONDS if deadline is None else max(0.0, min(POLL_SECONDS, deadline - clock())))


def _seconds(timeout):
    return f"{timeout:g}s"
