"""What points at a deployment that side-by-side re-creates under a new name, and what to change.

The operator labels a ModelDeployment's Pods with its name (app.kubernetes.io/instance; judge/live.
operator_labels), so what selects them, or names the deployment, keeps addressing the old one:
Services and PodDisruptionBudgets whose selector matches the old Pods and not the new ones,
HorizontalPodAutoscalers whose scaleTargetRef names the ModelDeployment, and the Ingresses and
HTTPRoutes whose backends are such a Service. Pure: objects in (load.recovery.load_referrers), a
list of findings out, one per object and deployment, each saying what to change.
"""

from __future__ import annotations

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.judge.live import operator_labels
from kubectl_kvcache.operator import api, decode
from kubectl_kvcache.record import Record

INSTANCE = "app.kubernetes.io/instance"
KINDS = "Services, HorizontalPodAutoscalers, PodDisruptionBudgets, Ingresses and HTTPRoutes"


class Renamed(Record):
    """One deployment side-by-side re-creates: its old and new names, and the label sets of its old
    Pods (as rendered for each role, and as the Pods in the cluster carry them) and of the new ones."""

    __slots__ = ("namespace", "old", "new", "old_labels", "new_labels")
    __hash__ = None

    def __init__(self, namespace, old, new, old_labels, new_labels):
        self.namespace, self.old, self.new = namespace, old, new
        self.old_labels, self.new_labels = old_labels, new_labels


def renamed(md: dict, new_name: str, pods) -> Renamed:
    """The Renamed of ModelDeployment `md` (a full object) re-created as `new_name`; `pods`:
    records.Pod of its namespace (those it controls are its old Pods)."""
    meta = md.get("metadata") or {}
    ns, name = meta.get("namespace"), meta.get("name")
    old, new = [], []
    try:
        record = decode.deployment_record(md)
    except PluginError:
        record = None
    for role in record.roles if record is not None else ():
        old.append(operator_labels(record, role))
        new.append(operator_labels(record.replace(name=new_name), role))
    for pod in pods:
        if pod.namespace == ns and pod.md_controlled and pod.owner[2] == name:
            old.append(dict(pod.labels))
            new.append({**pod.labels, INSTANCE: new_name} if pod.labels.get(INSTANCE) == name else dict(pod.labels))
    if not old:         # nothing rendered or running: the one label the operator always derives from the name
        old, new = [{INSTANCE: name}], [{INSTANCE: new_name}]
    return Renamed(ns, name, new_name, old, new)


def _match_labels(selector, labels) -> bool:
    """A LabelSelector (matchLabels, matchExpressions) against a label set, as the API server
    matches it (apimachinery: LabelSelectorAsSelector): {} selects every Pod."""
    if not isinstance(selector, dict):
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or ():
        if not isinstance(e, dict):
            return False
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or ()
        if op == "In" and labels.get(key) not in values or op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels or op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _match_map(selector, labels) -> bool:
    """A Service's spec.selector: none or empty selects no Pod (its endpoints are kept by hand)."""
    return isinstance(selector, dict) and bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _selects(match, selector, r: Renamed) -> tuple[bool, bool]:
    """(selects old Pods, selects new Pods)."""
    return any(match(selector, ls) for ls in r.old_labels), any(match(selector, ls) for ls in r.new_labels)


def _pairs(selector) -> str:
    return ",".join(f"{k}={v}" for k, v in selector.items())


def _label_selector_text(sel) -> str:
    parts = [f"{k}={v}" for k, v in (sel.get("matchLabels") or {}).items()]
    parts += [f"{e.get('key')} {e.get('operator')}" + (f" ({','.join(map(str, e.get('values') or ()))})"
                                                       if e.get("values") else "")
              for e in sel.get("matchExpressions") or () if isinstance(e, dict)]
    return ",".join(parts) or "{} (every Pod)"


def _finding(obj, r: Renamed, points, do, change=True) -> dict:
    meta = obj.get("metadata") or {}
    return {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"), "namespace": meta.get("namespace"),
            "name": meta.get("name"), "deployment": r.old, "newName": r.new, "points": points, "do": do,
            "change": change}


def _service(svc, r):
    sel = (svc.get("spec") or {}).get("selector") or {}
    old, new = _selects(_match_map, sel, r)
    if not old:
        return None
    points = f"spec.selector {_pairs(sel)} selects the Pods of {r.old}"
    if new:
        return _finding(svc, r, points, f"nothing: it selects the Pods of {r.new} too", change=False)
    keys = [k for k, v in sel.items() if v == r.old]
    do = ("set " + ", ".join(f"spec.selector.{k} to {r.new}" for k in keys) if keys else
          f"change spec.selector so that it selects the Pods of {r.new} ({INSTANCE}={r.new})")
    return _finding(svc, r, points, do)


def _pdb(pdb, r):
    sel = (pdb.get("spec") or {}).get("selector")      # null selects no Pod, {} every Pod
    old, new = _selects(_match_labels, sel, r)
    if not old or not isinstance(sel, dict):
        return None
    points = f"spec.selector {_label_selector_text(sel)} selects the Pods of {r.old}"
    if new:
        return _finding(pdb, r, points, f"nothing: it selects the Pods of {r.new} too", change=False)
    keys = [k for k, v in (sel.get("matchLabels") or {}).items() if v == r.old]
    do = ("set " + ", ".join(f"spec.selector.matchLabels.{k} to {r.new}" for k in keys) if keys else
          f"change spec.selector so that it selects the Pods of {r.new} ({INSTANCE}={r.new})")
    return _finding(pdb, r, points, do)


def _hpa(hpa, r):
    target = (hpa.get("spec") or {}).get("scaleTargetRef")
    if not isinstance(target, dict) or target.get("kind") != api.MD_KIND or target.get("name") != r.old:
        return None
    group = str(target.get("apiVersion") or "").split("/", 1)[0] if "/" in str(target.get("apiVersion") or "") else ""
    if group and group != api.GROUP:
        return None
    return _finding(hpa, r, f"spec.scaleTargetRef names {api.MD_KIND} {r.old}",
                    f"set spec.scaleTargetRef.name to {r.new} (until then it scales the old one, and nothing "
                    f"scales {r.new})")


def _ingress_backends(ing):
    """(field path, Service name) of each backend of an Ingress."""
    spec = ing.get("spec") or {}
    default = ((spec.get("defaultBackend") or {}).get("service") or {}).get("name")
    if default:
        yield "spec.defaultBackend.service.name", default
    for i, rule in enumerate(spec.get("rules") or ()):
        for j, path in enumerate(((rule or {}).get("http") or {}).get("paths") or ()):
            name = (((path or {}).get("backend") or {}).get("service") or {}).get("name")
            if name:
                yield f"spec.rules[{i}].http.paths[{j}].backend.service.name", name


def _route_backends(route):
    """(field path, Service name) of each backendRef of an HTTPRoute that is a Service of its own
    namespace (group '' and kind Service are the defaults; Gateway API v1 HTTPBackendRef)."""
    ns = (route.get("metadata") or {}).get("namespace")
    for i, rule in enumerate((route.get("spec") or {}).get("rules") or ()):
        for j, ref in enumerate((rule or {}).get("backendRefs") or ()):
            if not isinstance(ref, dict) or (ref.get("group") or "") != "" or (ref.get("kind") or "Service") != "Service":
                continue
            if (ref.get("namespace") or ns) != ns or not ref.get("name"):
                continue
            yield f"spec.rules[{i}].backendRefs[{j}].name", ref["name"]


def pointing_at(referrers, renames: list[Renamed]) -> list[dict]:
    """Every object of `referrers` (load.recovery.Referrers) that points at a renamed deployment,
    with what points and what to change, in a stable order (kind, name, deployment)."""
    if referrers is None:
        return []
    objs = referrers.objects
    out = []
    for r in renames:
        selecting = {}      # Service name -> its finding, for the routes in front of it
        for svc in objs.get("Service") or ():
            f = _service(svc, r)
            if f is not None:
                out.append(f)
                if f["change"]:
                    selecting[f["name"]] = f
        out += [f for f in (_hpa(h, r) for h in objs.get("HorizontalPodAutoscaler") or ()) if f]
        out += [f for f in (_pdb(p, r) for p in objs.get("PodDisruptionBudget") or ()) if f]
        for kind, backends in (("Ingress", _ingress_backends), ("HTTPRoute", _route_backends)):
            for route in objs.get(kind) or ():
                hits = [(path, name) for path, name in backends(route) if name in selecting]
                if not hits:
                    continue
                names = sorted({n for _, n in hits})
                paths = ", ".join(p for p, _ in hits)
                out.append(_finding(route, r, f"{paths} {'route' if len(hits) > 1 else 'routes'} to Service {', '.join(names)}, which selects only "
                                              f"the Pods of {r.old}",
                                    f"nothing once Service {', '.join(names)} selects the Pods of {r.new} (above); "
                                    f"if a new Service is made for them instead, point {paths} at it",
                                    change=False))
    order = {"Service": 0, "HorizontalPodAutoscaler": 1, "PodDisruptionBudget": 2, "Ingress": 3, "HTTPRoute": 4}
    return sorted(out, key=lambda f: (f["deployment"], order.get(f["kind"], 9), str(f["name"])))


def unchecked(referrers) -> list[str]:
    """What could not be checked (RBAC, the limit), in the plan's words."""
    return list(referrers.unchecked) if referrers is not None else []
