"""What a resumed recovery trusts, and why (docs/recover.md, "Who can write what").

The recovery's record (a ConfigMap) and the --backup-dir files can be written by anyone who may
write ConfigMaps in the namespace, or the folder: they are hints, never an authority. What a
resume acts on is anchored in objects only the recovery's own privileges write:

- the new Binding it creates carries the old Binding's name and uid, the strategy, and one
  annotation per backup the run took (the sha256 of the backup's canonical JSON), written on it
  before the object backed up is deleted or patched;
- the Setting carries which recovery turned it off, written in the same patch that turns it off
  and removed by the one that turns it on.

A backup the plan would restore is used only when its digest is on the anchor; the Setting is
turned on again only when it carries this recovery's mark; a target comes from the flags or the
anchor. Pure: no cluster, no files.
"""

from __future__ import annotations

import copy
import hashlib
import json

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.operator import api
from kubectl_kvcache.record import Record

KEY_HEX = 63        # an annotation name part is at most 63 characters: the digest's first 63 hex digits


def canonical(obj) -> str:
    """The backup as the record stores it and as its digest is taken: managedFields dropped,
    keys sorted, no spaces, ASCII (the same text whichever copy, record or file, it is read from)."""
    obj = copy.deepcopy(obj)
    if isinstance(obj.get("metadata"), dict):
        obj["metadata"].pop("managedFields", None)
    return json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=True)


def digest(obj) -> str:
    return hashlib.sha256(canonical(obj).encode()).hexdigest()


def digest_key(hexdigest: str) -> str:
    return api.BACKUP_DIGEST_PREFIX + hexdigest[:KEY_HEX]


def describe(obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')} rv{meta.get('resourceVersion') or '0'}"


def digest_annotation(obj) -> dict:
    """The annotation the anchor gets for one backup: key from, value starting with, its digest."""
    hexdigest = digest(obj)
    return {digest_key(hexdigest): f"sha256:{hexdigest} {describe(obj)}"}


def anchor_annotations(old_name: str, old_uid: str | None, strategy: str) -> dict:
    """What the new Binding is created with: which recovery made it."""
    out = {api.RECOVERED_FROM: old_name, api.RECOVERY_STRATEGY: strategy}
    if old_uid:
        out[api.RECOVERED_FROM_UID] = old_uid
    return out


OWN_ANNOTATIONS = (api.RECOVERED_FROM, api.RECOVERED_FROM_UID, api.RECOVERY_STRATEGY, api.TURNED_OFF_BY)


def is_own(key: str) -> bool:
    """An annotation recover writes as an anchor: never copied into a re-created object."""
    return key in OWN_ANNOTATIONS or key.startswith(api.BACKUP_DIGEST_PREFIX)


def setting_mark(namespace: str, name: str, uid: str | None) -> str:
    """The Setting's api.TURNED_OFF_BY value: the recovery (old Binding and its uid) that turned it off."""
    return f"KVCachePoolBinding {namespace}/{name} uid {uid or 'unknown'}"


def turned_off_by(setting, namespace, name, uid) -> bool:
    """Whether the Setting (records.Setting) carries this recovery's mark."""
    annotations = getattr(setting, "annotations", None) or {}
    return bool(uid) and annotations.get(api.TURNED_OFF_BY) == setting_mark(namespace, name, uid)


class Anchor(Record):
    """The new Binding an earlier run of this recovery created, and what it recorded on it."""

    __slots__ = ("namespace", "name", "old_name", "old_uid", "strategy", "dtype", "domain", "digests")
    __hash__ = None

    def __init__(self, namespace, name, old_name, old_uid, strategy, dtype, domain, digests):
        self.namespace, self.name, self.old_name, self.old_uid = namespace, name, old_name, old_uid
        self.strategy, self.dtype, self.domain = strategy, dtype, domain
        self.digests = digests          # {full hex digest}

    @property
    def ref(self) -> str:
        return f"KVCachePoolBinding {self.namespace}/{self.name}"


def _anchor_of(binding) -> Anchor:
    meta = binding.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    spec = found if isinstance(found := binding.get("spec"), dict) else {}
    domain = found if isinstance(found := spec.get("domain"), dict) else {}
    digests = set()
    for k, v in annotations.items():
        if k.startswith(api.BACKUP_DIGEST_PREFIX) and isinstance(v, str) and v.startswith("sha256:"):
            hexdigest = v[len("sha256:"):].split(" ", 1)[0]
            if hexdigest[:KEY_HEX] == k[len(api.BACKUP_DIGEST_PREFIX):]:
                digests.add(hexdigest)
    return Anchor(meta.get("namespace"), meta.get("name"), annotations.get(api.RECOVERED_FROM),
                  annotations.get(api.RECOVERED_FROM_UID), annotations.get(api.RECOVERY_STRATEGY),
                  domain.get("dtype"), domain.get("name") or "default", digests)


def find_anchor(bindings, namespace, old_name, old_uid) -> Anchor | None:
    """The Binding in `namespace` that a recovery of `old_name` created: the one naming `old_uid`
    (the old Binding still exists), or, when it is gone (old_uid None), the newest one naming it.
    Several for the same uid: refused (which target to continue is not decidable)."""
    found = []
    for b in bindings:
        meta = b.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        if meta.get("namespace") != namespace or annotations.get(api.RECOVERED_FROM) != old_name:
            continue
        if old_uid is not None and annotations.get(api.RECOVERED_FROM_UID) != old_uid:
            continue
        found.append((meta.get("creationTimestamp") or "", meta.get("name") or "", b))
    if not found:
        return None
    found.sort(key=lambda t: (t[0], t[1]))
    if old_uid is not None and len(found) > 1:
        names = ", ".join(n for _, n, _ in found)
        raise PluginError(f"KVCachePoolBindings {names} in namespace {namespace} each record a recovery of "
                          f"{old_name} (uid {old_uid}): continue one with --name, or delete the others")
    return _anchor_of(found[-1][2])


def restorable(backup, namespace, old_name, md_kind, binding_kind, binding_of) -> bool:
    """Whether the plan could restore this backup: the old Binding, or a ModelDeployment of the
    namespace naming it (every other backup is never read back: it is for people)."""
    obj = backup.object
    meta = obj.get("metadata") or {}
    if (meta.get("namespace") or "default") != namespace:
        return False
    if obj.get("kind") == binding_kind:
        return meta.get("name") == old_name
    return obj.get("kind") == md_kind and binding_of(obj) == old_name


def verified(backups, anchor: Anchor | None, is_restorable, old_ref: str) -> list[dict]:
    """`backups`: load.recovery.Backup (the object and where it was read). The backups the plan
    may restore, each checked against the anchor's digests; one it cannot
    verify is a refusal naming where it was read. Backups the plan never restores are left out."""
    out, seen = [], set()
    for b in backups:
        if not is_restorable(b):
            continue
        hexdigest = digest(b.object)
        if anchor is None or hexdigest not in anchor.digests:
            why = (f"its sha256 {hexdigest[:12]}... is not among the backups {anchor.ref} records"
                   if anchor is not None else f"no KVCachePoolBinding records a recovery of {old_ref} (no run of "
                                              f"this recovery created its Binding yet), so no backup can be its own")
            raise PluginError(f"{b.where}: not a backup this recovery took ({describe(b.object)}; {why}); nothing was "
                              f"changed: review it and remove it (or the whole record), then run again")
        if hexdigest not in seen:
            seen.add(hexdigest)
            out.append(b.object)
    return out


# -- the record's size: found at plan time ---------------------------------------------------

CONFIGMAP_MAX = 1024 * 1024         # the API server's limit on a ConfigMap's data (corev1.MaxSecretSize)
STATE_ALLOWANCE = 8 * 1024          # recovery.json and the keys' names


def backup_size(obj) -> int:
    return len(canonical(obj).encode())


def check_fits(objects, used: int, record_ref: str):
    """Refuse, before the first change, a recovery whose backups cannot all be written to its
    record: one object larger than a ConfigMap, or all of them with what the record holds."""
    limit = CONFIGMAP_MAX - STATE_ALLOWANCE
    total = used
    for obj in objects:
        size = backup_size(obj)
        if size > limit:
            raise PluginError(f"{describe(obj).rsplit(' rv', 1)[0]} is {size} bytes: its backup does not fit the "
                              f"recovery's record ({record_ref}, at most {CONFIGMAP_MAX} bytes in all), so recover "
                              f"cannot back it up before it deletes or patches it; nothing was changed: move it by "
                              f"hand (docs/recover.md, \"Objects larger than the record\"), then run again")
        total += size
    if total > limit:
        raise PluginError(f"the backups this recovery takes ({total - used} bytes, with the {used} bytes the record "
                          f"holds already) do not fit the recovery's record ({record_ref}, at most {CONFIGMAP_MAX} "
                          f"bytes in all); nothing was changed: move the largest deployments by hand "
                          f"(docs/recover.md, \"Objects larger than the record\"), then run again")
