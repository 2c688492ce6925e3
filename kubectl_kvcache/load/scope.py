"""Which objects a command looks at (-n, -A, -l, POD names, -f, workloads, --assume-setting),
and the one namespace that resolves to."""

from __future__ import annotations

from kubectl_kvcache.record import Record


class Scope(Record):
    """Which objects a command looks at."""

    __slots__ = ("namespace", "all_namespaces", "selector", "names", "files", "workloads", "workloads_skipped",
                 "assume_setting", "workloads_flag", "pools", "recoveries")

    def __init__(self, namespace: str | None = None, all_namespaces: bool = False, selector: str | None = None,
                 names: tuple[str, ...] = (), files: tuple[str, ...] = (), workloads: bool = False,
                 workloads_skipped: bool = False, assume_setting: bool | None = None,
                 workloads_flag: str | None = None, pools: bool = False, recoveries: bool = False):
        self.namespace = namespace                  # -n; None: the context's namespace (or all with -A)
        self.all_namespaces = all_namespaces
        self.selector = selector                    # -l, ANDed with the plugin's own selectors
        self.names = names                          # Pod names (verify)
        self.files = files                          # -f: read these instead of a cluster
        self.workloads = workloads                  # also read workload templates (injection opt-ins)
        # --skip-workloads: the command would read them, the user said not to
        self.workloads_skipped = workloads_skipped
        self.assume_setting = assume_setting        # --assume-setting: judge without reading the Setting
        # the flag of the command that does without the workload lists (a refusal names it); None:
        # the command has none (recover: it re-points the templates, it needs them)
        self.workloads_flag = workloads_flag
        self.pools = pools                          # also list the KVCachePools (which master holds a domain)
        self.recoveries = recoveries                # also read recovery records (an unfinished recovery is named)


def resolve_namespace(scope: Scope, client=None) -> str | None:
    """The one namespace to look at, or None for all: -A, else -n, else the context's (files: all)."""
    if scope.all_namespaces:
        return None
    if scope.namespace:
        return scope.namespace
    return client.namespace if client is not None else None
