"""What a controller says when it could not create what it should: its Warning events, read for
the objects that are short of Pods (a ModelDeployment with replicas that have no Pod, the owner of
a Pod opted into injection), so that a create the API server refuses is said instead of waited out.

Where the words come from (each read from the code that writes them):
- `FailedCreate`: Kubernetes' ReplicaSet (and ReplicationController, Job, DaemonSet) controllers,
  pkg/controller/controller_utils.go RealPodControl.createPods: `Recorder.Eventf(object, Warning,
  FailedCreatePodReason, "Error creating: %v", err)`, source component `replicaset-controller`;
  the StatefulSet controller, pkg/controller/statefulset/stateful_pod_control.go recordPodEvent:
  reason "Failed" + "Create", message `create Pod NAME in StatefulSet SET failed error: ERR`,
  component `statefulset-controller`. When an admission webhook refused the Pod, ERR is the API
  server's StatusError (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/
  statuserror.go ToStatusErr): `pods "NAME" is forbidden: admission webhook "WEBHOOK" denied the
  request: MESSAGE` (older servers: without the `pods "NAME" is forbidden: ` head; a webhook that
  gave no message: `... denied the request without explanation`).
- `RenderFailed`: the operator's own, on a ModelDeployment whose pass could not build a replica
  at all (gpustack-operator pkg/worker/controllers/worker/model_deployment_events.go,
  modelDeploymentEventRenderFailed; model_deployment.go convergeModelDeployment records it with
  the renderer's error: "an Event is the only place the cause reaches a reader").
- The webhooks' names (pkg/worker/webhooks/worker/zz_generated.webhooks.go): the Pod injection
  webhook `mutate.gpustack-worker-kvcache.core.v1.pod` (Pods labelled kvcache.gpustack.ai/inject
  =true, CREATE, failurePolicy Fail), the ModelDeployment one
  `validate.worker.gpustack.ai.v1alpha1.modeldeployment` (CREATE and UPDATE).

Bounded and selected by the server: one request per object and reason
(`fieldSelector=involvedObject.uid=UID,reason=R`, or kind and name where no uid is known), at
most PAGE events each, MAX_OBJECTS objects a read; the message is cluster text (masked here, cut
to MESSAGE_CHARS; escaped where printed). A refusal to list events (RBAC) is said, never taken
for "nothing refused". Reads; never judges (judge/verify.py decides what a refusal means).
"""

from __future__ import annotations

import re

from kubectl_kvcache import masking
from kubectl_kvcache.errors import Forbidden, PluginError
from kubectl_kvcache.operator.webhooks import INJECTION_WEBHOOK, MODEL_DEPLOYMENT_WEBHOOK  # noqa: F401 (named here)
from kubectl_kvcache.record import Record

FAILED_CREATE, RENDER_FAILED = "FailedCreate", "RenderFailed"
PAGE = 20               # events per request (the latest one is what counts; more is said)
MAX_OBJECTS = 20        # objects a read asks about; the rest are said in a note
MESSAGE_CHARS = 500     # of a message kept (a webhook's message is written by whoever runs it)
PAGE_BYTES = 1 << 20

# The two message shapes above, then the API server's admission error inside them.
_CONTROLLER = (re.compile(r"Error creating: (?P<err>.*)", re.S),
               re.compile(r"create Pod (?P<pod>\S+) in StatefulSet (?P<set>\S+) failed error: (?P<err>.*)", re.S))
_ADMISSION = re.compile(r'(?:(?P<resource>[a-z0-9.]+) "(?P<name>[^"]*)" is forbidden: )?'
                        r'admission webhook "(?P<webhook>[^"]+)" denied the request'
                        r'(?:: (?P<why>.*)| without explanation)', re.S)


def denial(message: str) -> tuple[str, str] | None:
    """(webhook, its message) when `message` is a controller's FailedCreate for a Pod an admission
    webhook denied, as Kubernetes writes it (above); None for any other message."""
    for shape in _CONTROLLER:
        found = shape.fullmatch(message)
        if found:
            refused = _ADMISSION.fullmatch(found.group("err"))
            return (refused.group("webhook"), refused.group("why") or "") if refused else None
    return None


class Refusal(Record):
    """A controller's latest word that it could not create an object's Pods. `last`: when it was
    last said (RFC 3339, to the second); `webhook`/`denied`: the admission webhook that refused
    the Pod and its message, when the event is one (denial())."""

    __slots__ = ("namespace", "kind", "name", "reason", "message", "count", "last", "component", "webhook",
                 "denied")
    spec = False        # said by a controller (judge/verify.SpecRefusal: the spec itself is refused)

    def __init__(self, namespace: str, kind: str, name: str, reason: str, message: str, count: int = 1,
                 last: str = "", component: str = "", webhook: str | None = None, denied: str | None = None):
        self.namespace = namespace
        self.kind = kind
        self.name = name
        self.reason = reason
        self.message = message
        self.count = count
        self.last = last
        self.component = component
        self.webhook = webhook
        self.denied = denied

    @property
    def said(self) -> str:
        """`FailedCreate (x13, last 2026-12-05T15:02:11Z, replicaset-controller): Error creating: ...`."""
        when = ", ".join(x for x in (f"x{self.count}" if self.count > 1 else "", f"last {self.last}" if self.last
                                     else "", self.component) if x)
        return f"{self.reason}{f' ({when})' if when else ''}: {self.message}"

    def to_dict(self):
        return {"reason": self.reason, "message": self.message, "count": self.count, "last": self.last,
                "component": self.component, "webhook": self.webhook, "denied": self.denied,
                "involvedObject": {"kind": self.kind, "namespace": self.namespace, "name": self.name}}


class Read(Record):
    """What one read found: the latest refusal per object ((namespace, kind, name) -> Refusal),
    the namespaces whose events may not be listed, the first other failure, and the objects not
    asked about (beyond MAX_OBJECTS) or whose events went on past a page."""

    __slots__ = ("refusals", "denied", "failed", "skipped", "more")

    @property
    def bounds(self):
        """This module: its bounds, as render says them."""
        import sys

        return sys.modules[__name__]

    def __init__(self):
        self.refusals: dict = {}
        self.denied: set = set()
        self.failed: str | None = None
        self.skipped = 0
        self.more = 0


def read(client, objects, denied=frozenset()) -> Read:
    """The refusals of `objects`: (namespace, kind, name, uid or None, reasons) each. `denied`:
    namespaces already known not to allow listing events (not asked again)."""
    found = Read()
    found.denied.update(denied)
    objects = list(objects)
    found.skipped = max(0, len(objects) - MAX_OBJECTS)
    for namespace, kind, name, uid, reasons in objects[:MAX_OBJECTS]:
        if namespace in found.denied:
            continue
        which = f"involvedObject.uid={uid}" if uid else f"involvedObject.kind={kind},involvedObject.name={name}"
        latest = None
        for reason in reasons:
            try:
                items, more = client.list_page(f"/api/v1/namespaces/{namespace}/events",
                                               fields=f"{which},reason={reason}", limit=PAGE, max_bytes=PAGE_BYTES,
                                               what=f"list events of {kind.lower()} {name} in namespace {namespace}")
            except Forbidden:
                found.denied.add(namespace)
                break
            except PluginError as exc:
                found.failed = found.failed or masking.mask(str(exc))
                continue
            found.more += more
            for event in items:
                refusal = _refusal(event, namespace, kind, name, reason)
                if refusal is not None and (latest is None or refusal.last > latest.last):
                    latest = refusal
        if latest is not None:
            found.refusals[(namespace, kind, name)] = latest
    return found


def _refusal(event: dict, namespace, kind, name, reason) -> Refusal | None:
    """One Event object (core/v1, as the API server returns it) as a Refusal; None when it is not
    a Warning with that reason (the server selected it; a look costs nothing) or has no message."""
    if event.get("reason") != reason or event.get("type") not in ("Warning", None):
        return None
    message = event.get("message") if isinstance(event.get("message"), str) else ""
    if not message:
        return None
    series = _obj(event.get("series"))
    meta = _obj(event.get("metadata"))
    last = next((t for t in (series.get("lastObservedTime"), event.get("lastTimestamp"), event.get("eventTime"),
                             meta.get("creationTimestamp")) if isinstance(t, str) and t), "")
    count = next((c for c in (series.get("count"), event.get("count")) if isinstance(c, int) and c > 0), 1)
    source = _obj(event.get("source"))
    component = next((c for c in (source.get("component"), event.get("reportingComponent"))
                      if isinstance(c, str) and c), "")
    refused = denial(message)
    return Refusal(namespace, kind, name, reason, _kept(message), count, seconds(last), _kept(component),
                   refused[0] if refused else None, _kept(refused[1]) if refused else None)


def _obj(value) -> dict:
    return value if isinstance(value, dict) else {}


def _kept(text: str) -> str:
    """Cluster text as kept: masked (masking.py), cut to MESSAGE_CHARS with the cut said."""
    text = masking.mask(text)
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + f"... ({len(text) - MESSAGE_CHARS} more)"


def seconds(stamp: str) -> str:
    """An RFC 3339 time to the second (`2026-12-05T15:02:11.123456Z` -> `2026-12-05T15:02:11Z`), so
    that times of either precision compare as strings; "" stays ""."""
    return stamp[:19] + "Z" if len(stamp) >= 19 else stamp
