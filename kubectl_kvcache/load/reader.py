"""The snapshot a command asked for, from files (-f) or the cluster, and the connection that
starts ahead of the command's imports (warm) with the first snapshot loaded meanwhile."""

from __future__ import annotations

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load import cluster
from kubectl_kvcache.load.manifests import load_files
from kubectl_kvcache.load.scope import Scope, resolve_namespace
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.kube.connection import Connection

def open_client(connection: Connection, trace=None):
    """The API client for these connection flags (the one warm() started, if any); `trace` prints
    KVCACHE_TRACE lines."""
    from kubectl_kvcache.kube.client import Client, claim

    return claim(connection) or Client(connection, trace=trace)


def interruptible():
    """Ctrl-C closes the connections of clients made in other threads too (kube.client.install_interrupt)."""
    from kubectl_kvcache.kube.client import install_interrupt

    install_interrupt()


def may_prompt(connection: Connection) -> bool:
    """Whether reading through `connection` could run an exec plugin that asks on the terminal."""
    from kubectl_kvcache.kube.client import may_prompt as prompts

    return prompts(connection)


def warm(connection: Connection, trace=None, scope: Scope | None = None):
    """Start connecting to the cluster in the background (see kube.warm): the command's modules
    are imported meanwhile. `scope`: the snapshot the command will load first, loaded meanwhile
    too (read() takes it, or raises what loading it raised). Only the command line's own run
    calls this."""
    from kubectl_kvcache.kube.client import warm as start

    then = None
    if scope is not None and not scope.files:
        def then(client):
            try:
                _PREFETCHED[(connection, scope)] = (_load_cluster_in(client, connection, scope), None)
            except BaseException as exc:    # noqa: B902 - raised again in the thread that asks for it
                _PREFETCHED[(connection, scope)] = (None, exc)

    start(connection, (api.GROUP, api.SETTING_GROUP), trace, then)


_PREFETCHED: dict = {}    # (Connection, Scope) -> (snapshot, None) | (None, what loading it raised)


def read(connection: Connection, scope: Scope, stdin=None, trace=None) -> records.Snapshot:
    """The snapshot the command asked for: files when -f is given (no cluster is contacted)."""
    if scope.files:
        namespace = resolve_namespace(scope)
        result = load_files(scope.files, scope.replace(namespace=namespace), stdin=stdin)
        result.namespace = namespace
        return result
    client = open_client(connection, trace)     # waits for warm(), so for a snapshot it loads
    prefetched = _PREFETCHED.pop((connection, scope), None)
    if prefetched is not None:
        result, error = prefetched
        if error is not None:
            raise error
        return result
    return _load_cluster_in(client, connection, scope)


def _load_cluster_in(client, connection: Connection, scope: Scope) -> records.Snapshot:
    namespace = resolve_namespace(scope, client)
    if scope.names and namespace is None:
        raise PluginError("naming pods needs one namespace: drop -A or pass -n")
    result = cluster.load_cluster(client, scope.replace(namespace=namespace), chunk=connection.chunk_size)
    result.namespace = namespace
    result.server = getattr(client, "host", None)
    return result
