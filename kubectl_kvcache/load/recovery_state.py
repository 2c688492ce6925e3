"""The recovery's record, as `kubectl kvcache recover --apply` writes it (cli/flows/recovery_record.py):
a ConfigMap `kvcache-recover-<binding>` in the Binding's namespace, and its format. Read by recover
(load/recovery.py: to continue it) and by verify, check and bindings (an unfinished recovery is
named until it is done: judge/checks/recovery.py). Anyone with ConfigMap rights in the namespace
can write one: parsed strictly, never trusted for what a run acts on (judge/anchor.py)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.kube import names
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.record import Record


class Backup(Record):
    """One backup as read, with where it was read (a ConfigMap key, a file): what a refusal names.
    Untrusted until judge/anchor.py verified it."""

    __slots__ = ("object", "where")
    __hash__ = None

    def __init__(self, object: dict, where: str):
        self.object = object
        self.where = where


RECORD_PREFIX = "kvcache-recover-"
RECORD_KEY = "recovery.json"        # the state: target, whether this recovery turned the Setting off
BACKUP_PREFIX = "backup."           # one key per backed-up object (its JSON, managedFields dropped)
RECORD_LABEL = ("app.kubernetes.io/managed-by", "kubectl-kvcache")
RECORD_ANNOTATION = api.ANNOTATION_PREFIX + "recovery-of"
CONFIG_MAP = api.Resource("ConfigMap", "", "configmaps", "v1")
NAME_MAX = 253


def record_name(binding_name: str) -> str:
    """`kvcache-recover-<binding>`; a name too long for a ConfigMap is cut and ends in a hash."""
    name = RECORD_PREFIX + binding_name
    if len(name) <= NAME_MAX:
        return name
    digest = hashlib.sha256(binding_name.encode()).hexdigest()[:10]
    return f"{name[:NAME_MAX - 11].rstrip('-.')}-{digest}"


class RecoveryRecord(Record):
    """What an earlier run of this recovery wrote: hints, never an authority (judge/anchor.py): the
    old Binding's uid, the target it moved to, whether it turned the Setting off, whether it
    finished, the backups it took (each a Backup, verified before use), and the run that holds it
    (holder, expires: one run at a time). stale: a finished record of an earlier Binding of the
    same name (another uid), replaced by a new recovery."""

    __slots__ = ("name", "namespace", "binding", "uid", "target", "setting_turned_off", "finished", "backups",
                 "resource_version", "holder", "expires", "stale", "size", "progress")
    __hash__ = None

    def __init__(self, name, namespace, binding, uid, target, setting_turned_off, finished, backups,
                 resource_version=None, holder=None, expires=None, stale=False, size=0, progress=None):
        self.name, self.namespace, self.binding, self.uid = name, namespace, binding, uid
        self.target = target                            # {name, domain, dtype, strategy}
        self.setting_turned_off = setting_turned_off
        self.finished = finished
        self.backups = backups
        self.resource_version = resource_version
        self.holder = holder                            # {id, agent, host, pid, since} or None
        self.expires = expires                          # RFC 3339 UTC, or None
        self.stale = stale
        self.size = size                                # bytes of data (what the API server counts)
        self.progress = progress                        # {step, steps, doing}: the step a run began last, or None

    @property
    def ref(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name}"

    def state(self) -> dict:
        return {"binding": {"namespace": self.namespace, "name": self.binding, "uid": self.uid},
                "target": self.target, "settingTurnedOff": self.setting_turned_off, "finished": self.finished,
                "holder": self.holder, "expires": self.expires, "progress": self.progress}

    def active(self, now=None) -> bool:
        """Held by a run whose lease has not expired (and not finished)."""
        if self.finished or not self.holder or not self.expires:
            return False
        expires = parse_time(self.expires)
        return expires is None or expires > (now or datetime.now(timezone.utc))

    def held_by(self) -> str:
        h = self.holder or {}
        return (f"{h.get('agent') or 'a run'} on host {h.get('host') or '?'} pid {h.get('pid') or '?'} since "
                f"{h.get('since') or '?'}, until {self.expires or '?'}")


def parse_time(text):
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def format_time(when) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_record(obj: dict) -> RecoveryRecord:
    """A record ConfigMap as read, parsed strictly (anyone with ConfigMap rights in the namespace
    may have written it): a value that is not what the executor writes is an error naming the
    ConfigMap and the key."""
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        meta = {}
    where = f"ConfigMap {meta.get('namespace')}/{meta.get('name')}"
    data = obj.get("data") or {}
    if not isinstance(data, dict):
        data = {}
    try:
        state = json.loads(data.get(RECORD_KEY) or "")
        if not isinstance(state, dict):
            raise ValueError("not an object")
        binding, target = state["binding"], state["target"]
        if not (isinstance(binding, dict) and isinstance(target, dict)):
            raise ValueError("binding and target must be objects")
        if not isinstance(binding.get("name"), str) or not binding["name"]:
            raise ValueError("binding.name must be a name")
        for key in ("namespace", "uid"):
            if binding.get(key) is not None and not isinstance(binding[key], str):
                raise ValueError(f"binding.{key} must be a string")
        for key in ("settingTurnedOff", "finished"):
            if state.get(key) is not None and not isinstance(state[key], bool):
                raise ValueError(f"{key} must be true or false")
        holder = state.get("holder")
        if holder is not None and not isinstance(holder, dict):
            raise ValueError("holder must be an object")
        if state.get("expires") is not None and parse_time(state["expires"]) is None:
            raise ValueError("expires must be a time (RFC 3339, UTC)")
        progress = _progress(state.get("progress"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PluginError(f"{where}: data.{RECORD_KEY} is not the recovery record kubectl kvcache recover writes "
                          f"({exc}); nothing was changed: review it, then delete the ConfigMap to plan anew") from exc
    backups = []
    for k, v in sorted(data.items()):
        if not k.startswith(BACKUP_PREFIX):
            continue
        try:
            b = json.loads(v)
            if not isinstance(b, dict):
                raise ValueError("not an object")
        except (ValueError, TypeError) as exc:
            raise PluginError(f"{where}: data.{k} is not a backup kubectl kvcache recover writes ({exc}); nothing "
                              f"was changed: review it and remove the key (or the ConfigMap), then run again") from exc
        backups.append(Backup(b, f"{where} key {k}"))
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in data.items())
    return RecoveryRecord(meta.get("name"), meta.get("namespace"), binding.get("name"), binding.get("uid"),
                          {k: target.get(k) for k in ("name", "domain", "dtype", "strategy")},
                          state.get("settingTurnedOff") is True, state.get("finished") is True,
                          backups, meta.get("resourceVersion"), holder,
                          state.get("expires") if isinstance(state.get("expires"), str) else None, size=size,
                          progress=progress)


STEPS_MAX = 10000           # more steps than any plan has: a larger number is not the executor's
DOING_MAX = 2000            # characters of the step's description kept (the executor writes fewer)


def _progress(progress) -> dict | None:
    """`progress` as the executor writes it before each step it runs: {step, steps, doing}."""
    if progress is None:
        return None
    if not isinstance(progress, dict):
        raise ValueError("progress must be an object")
    step, steps, doing = progress.get("step"), progress.get("steps"), progress.get("doing")
    if type(step) is not int or type(steps) is not int or not 1 <= step <= steps <= STEPS_MAX:
        raise ValueError(f"progress.step and progress.steps must be whole numbers, 1 <= step <= steps <= {STEPS_MAX}")
    if not isinstance(doing, str) or len(doing) > DOING_MAX:
        raise ValueError(f"progress.doing must be a string of at most {DOING_MAX} characters")
    return {"step": step, "steps": steps, "doing": doing}


def is_record(obj) -> bool:
    """A ConfigMap that is a recovery's record by its own account: the label recover writes and a
    name of the record's form (what it holds is parsed strictly: parse_record)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return False
    labels = meta.get("labels")
    name = meta.get("name")
    return (isinstance(labels, dict) and labels.get(RECORD_LABEL[0]) == RECORD_LABEL[1]
            and isinstance(name, str) and name.startswith(RECORD_PREFIX))


def state_of(obj, read_at: datetime, namespace_unset: str = "default") -> records.RecoveryState:
    """A record ConfigMap as verify and check read it: whose recovery, whether it finished, the
    step it began last, whether a run holds it (at `read_at`); one that is not a record recover
    writes, or that names a Binding other than the one its name says, is kept with `problem`.
    `namespace_unset`: the namespace of a saved object that names none (-n, as kubectl puts it)."""
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace") or namespace_unset, meta.get("name")
    if namespace != meta.get("namespace"):
        obj = dict(obj, metadata=dict(meta, namespace=namespace))
    try:
        record = parse_record(obj)
    except PluginError as exc:
        return records.RecoveryState(namespace, name, None, False, None, None, None,
                                     f"data.{RECORD_KEY}: {exc.__cause__ or exc}")
    if not (names.is_subdomain(record.binding) and isinstance(namespace, str) and names.is_label(namespace)):
        return records.RecoveryState(namespace, name, None, record.finished, None, None, None,
                                     f"data.{RECORD_KEY} names KVCachePoolBinding {namespace}/{record.binding}, "
                                     f"which is not a valid name")
    if record_name(record.binding) != name or (record.namespace is not None and record.namespace != namespace):
        return records.RecoveryState(namespace, name, None, record.finished, None, None, None,
                                     f"data.{RECORD_KEY} names KVCachePoolBinding "
                                     f"{record.namespace or namespace}/{record.binding}, not the Binding its name "
                                     f"says")
    held = record.held_by() if record.active(read_at) else None
    return records.RecoveryState(namespace, name, record.binding, record.finished, record.progress,
                                 record.setting_turned_off, held, None)


def list_states(client, namespace, chunk) -> tuple[list[records.RecoveryState] | None, str | None]:
    """The recovery records of `namespace` (None: every namespace), one list selected by the record's
    label: (states, None); (None, a note) when RBAC or the API server does not let them be listed
    (an unfinished recovery is then not seen, and the note says so)."""
    from kubectl_kvcache.errors import Forbidden, NotFound

    where = f"in namespace {namespace}" if namespace else "in all namespaces"
    read_at = datetime.now(timezone.utc)
    try:
        found = client.list(api.collection_path(client, CONFIG_MAP, namespace),
                            lambda o: state_of(o, read_at) if is_record(o) else None,
                            selector=f"{RECORD_LABEL[0]}={RECORD_LABEL[1]}", chunk=chunk,
                            what=f"list configmaps {where}")
    except (Forbidden, NotFound) as exc:
        return None, (f"recovery records (ConfigMaps {RECORD_PREFIX}BINDING) were not read ({exc}): a recovery "
                      f"stopped part-way is not seen here")
    return found, None
