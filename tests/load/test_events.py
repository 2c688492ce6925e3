"""load/events.py: a controller's FailedCreate (and the operator's RenderFailed) read boundedly,
selected by the server, its message parsed by the shapes Kubernetes writes (the module's
docstring cites them), masked and cut; a refusal to list events is said, never "nothing refused"."""

import pytest

from kubectl_kvcache.errors import Forbidden, PluginError
from kubectl_kvcache.load import events

WEBHOOK = "mutate.gpustack-worker-kvcache.core.v1.pod"
WHY = ('container "main" already passes --kv-transfer-config, so it already has a KV cache configured; two of '
       'them on one command line is undiagnosable')


@pytest.mark.parametrize("message, found", [
    # ReplicaSet controller (controller_utils.go createPods) with today's ToStatusErr (the `is forbidden` head)
    (f'Error creating: pods "web-7d4b9c-fghij" is forbidden: admission webhook "{WEBHOOK}" denied the request: {WHY}',
     (WEBHOOK, WHY)),
    # generateName before the server named it: the prefix, as kube-controller-manager logs show it
    (f'Error creating: pods "web-7d4b9c-" is forbidden: admission webhook "{WEBHOOK}" denied the request: {WHY}',
     (WEBHOOK, WHY)),
    # older API servers: the denial alone
    (f'Error creating: admission webhook "{WEBHOOK}" denied the request: {WHY}', (WEBHOOK, WHY)),
    (f'Error creating: admission webhook "{WEBHOOK}" denied the request without explanation', (WEBHOOK, "")),
    # StatefulSet controller (stateful_pod_control.go recordPodEvent)
    (f'create Pod web-0 in StatefulSet web failed error: pods "web-0" is forbidden: admission webhook "{WEBHOOK}" '
     f'denied the request: {WHY}', (WEBHOOK, WHY)),
    # a message spanning lines stays whole
    (f'Error creating: admission webhook "{WEBHOOK}" denied the request: line one\nline two',
     (WEBHOOK, "line one\nline two")),
    # not an admission denial: a quota, a timeout, the operator's own words
    ('Error creating: pods "web-7d4b9c-x" is forbidden: exceeded quota: compute, requested: cpu=1', None),
    ("Error creating: Timeout: request did not complete within requested timeout 30s", None),
    ('role "server": manufacturer "acme" has no runner backend', None),
    # the words elsewhere in a message are not its shape
    (f'something else: admission webhook "{WEBHOOK}" denied the request: {WHY}', None),
])
def test_a_denial_is_read_by_the_shape_kubernetes_writes(message, found):
    assert events.denial(message) == found


class Client:
    """Answers list_page as the API server would for the field selectors asked (recorded)."""

    def __init__(self, items=None, forbidden=(), fail=False, more=False):
        self.items, self.forbidden, self.fail, self.more = items or {}, forbidden, fail, more
        self.asked = []

    def list_page(self, path, fields=None, limit=None, max_bytes=None, what=None):
        self.asked.append((path, fields, limit))
        namespace = path.split("/")[4]
        if namespace in self.forbidden:
            raise Forbidden(f"forbidden: cannot {what}: events is forbidden")
        if self.fail:
            raise PluginError("the API server answered with something that is not JSON; password=hunter2")
        return [e for e in self.items.get(namespace, ()) if f"reason={e['reason']}" in fields], self.more


def ev(reason, message, last, count=1, **extra):
    return {"reason": reason, "message": message, "type": "Warning", "lastTimestamp": last, "count": count,
            "source": {"component": "replicaset-controller"}, **extra}


def test_the_latest_refusal_is_kept_selected_by_uid_and_reason_bounded():
    denied = f'Error creating: pods "w-x" is forbidden: admission webhook "{WEBHOOK}" denied the request: {WHY}'
    client = Client({"team": [ev("FailedCreate", "older", "2026-12-05T10:00:00Z"),
                              ev("FailedCreate", denied, "2026-12-05T10:05:00Z", count=13),
                              ev("RenderFailed", "no runner", "2026-12-05T09:00:00.123456Z")]})
    found = events.read(client, [("team", "ModelDeployment", "md", "uid-1", (events.FAILED_CREATE,
                                                                              events.RENDER_FAILED))])
    assert client.asked == [("/api/v1/namespaces/team/events", "involvedObject.uid=uid-1,reason=FailedCreate", 20),
                            ("/api/v1/namespaces/team/events", "involvedObject.uid=uid-1,reason=RenderFailed", 20)]
    r = found.refusals[("team", "ModelDeployment", "md")]
    assert (r.reason, r.count, r.last, r.webhook, r.denied) == ("FailedCreate", 13, "2026-12-05T10:05:00Z", WEBHOOK, WHY)
    assert r.said == f"FailedCreate (x13, last 2026-12-05T10:05:00Z, replicaset-controller): {denied}"
    # without a uid: by kind and name
    client = Client()
    events.read(client, [("team", "ReplicaSet", "w", None, (events.FAILED_CREATE,))])
    assert client.asked[0][1] == "involvedObject.kind=ReplicaSet,involvedObject.name=w,reason=FailedCreate"


def test_a_series_time_and_microtime_compare_to_the_second_and_the_message_is_masked_and_cut():
    long = "Error creating: x " + "y" * 2000 + " password=hunter2"
    client = Client({"team": [ev("FailedCreate", long, "", series={"lastObservedTime": "2026-12-05T10:05:07.999999Z",
                                                                    "count": 4})]})
    r = events.read(client, [("team", "ReplicaSet", "w", None, ("FailedCreate",))]).refusals[("team", "ReplicaSet", "w")]
    assert (r.last, r.count) == ("2026-12-05T10:05:07Z", 4)
    assert len(r.message) < 600 and r.message.endswith("more)")
    short = events.read(Client({"team": [ev("FailedCreate", "Error creating: password=hunter2", "")]}),
                        [("team", "ReplicaSet", "w", None, ("FailedCreate",))]).refusals[("team", "ReplicaSet", "w")]
    assert "hunter2" not in short.message and "password=***" in short.message


def test_a_namespace_whose_events_may_not_be_listed_is_said_and_not_asked_again_and_a_failure_is_masked():
    client = Client(forbidden=("team",))
    found = events.read(client, [("team", "ModelDeployment", "a", "u1", ("FailedCreate", "RenderFailed")),
                                 ("team", "ModelDeployment", "b", "u2", ("FailedCreate",))])
    assert found.denied == {"team"} and found.refusals == {} and len(client.asked) == 1
    failed = events.read(Client(fail=True), [("team", "ReplicaSet", "w", None, ("FailedCreate",))])
    assert failed.failed and "hunter2" not in failed.failed


def test_at_most_max_objects_are_asked_about_and_a_page_that_goes_on_is_counted():
    client = Client(more=True)
    objects = [("team", "ModelDeployment", f"md{n}", f"u{n}", ("FailedCreate",)) for n in range(events.MAX_OBJECTS + 3)]
    found = events.read(client, objects)
    assert len(client.asked) == events.MAX_OBJECTS and found.skipped == 3 and found.more == events.MAX_OBJECTS


def test_a_normal_or_empty_event_is_not_a_refusal():
    client = Client({"team": [ev("FailedCreate", "", "2026-12-05T10:00:00Z"),
                              {**ev("FailedCreate", "Error creating: x", "2026-12-05T10:00:00Z"), "type": "Normal"}]})
    assert events.read(client, [("team", "ReplicaSet", "w", None, ("FailedCreate",))]).refusals == {}
