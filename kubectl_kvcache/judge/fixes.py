"""The fix vocabulary check and verify share: one phrase per kind of fix, so the two commands
say the same thing about the same object. Pure; each phrase is computed from the objects as
they are now (a fix never names what is already gone from the spec)."""

from __future__ import annotations

from kubectl_kvcache.operator import api


def recover_command(namespace, binding) -> str:
    """The command that walks the guide's recovery for one Binding."""
    return f"kubectl kvcache recover {binding} -n {namespace}"


def recover_fix(namespace, binding, dtype: str | None = None, detail: str = "") -> str:
    """A rejected Binding: its recover command (with --dtype when recover has no suggestion of its
    own to pick), and `detail` in parentheses."""
    command = recover_command(namespace, binding) + (f" --dtype {dtype}" if dtype else "")
    return f"recover it: {command}" + (f" ({detail})" if detail else "")


def missing_binding_fix(namespace, binding, deployment: bool) -> str:
    """A deployment, Pod or template naming a Binding that does not exist."""
    where = "spec.kvCache.poolRef.name (a new deployment)" if deployment else f"annotation {api.BINDING_ANNOTATION}"
    return f"create KVCachePoolBinding {binding} in namespace {namespace}, or point {where} at an existing Binding"


def remove_own_flag(entries: str, where: str) -> str:
    """A role's own --kv-cache-dtype, still in its spec."""
    return f"remove {entries} from {where} (the role's own --kv-cache-dtype)"


def own_flag_gone(where: str) -> str:
    """A replica still running a role's own --kv-cache-dtype that the spec no longer has."""
    return (f"nothing to change in the spec: the role's own --kv-cache-dtype is no longer in {where}; the replica "
            f"drops it when it rolls at {where}'s next reconcile")
