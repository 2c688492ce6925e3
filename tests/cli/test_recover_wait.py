"""cli/flows/recover.py's wait for the new Binding (the plan's `ready` step), driven in-process
with the Binding's status as the operator writes it: done at Ready with QuotaGranted True, waited
through what passes by itself (Provisioning, a zero grant after a master restart), ended at once,
naming the Binding and the operator's message, where waiting cannot help (a contested domain, the
Binding deleted), and timed out with the last status said. The old wait for `status.phase Bound`,
a word the operator never writes, ended only at its timeout."""

import io

import pytest

import objects as o
from kubectl_kvcache.cli.flows import recover as flow
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.judge import recover


class _Journal:
    state: dict = {}

    def renew(self):
        pass


class _Options:
    def __init__(self, timeout):
        self.timeout = timeout


def _executor(statuses, timeout=30.0):
    """An Executor reading the new Binding's successive statuses (the last one repeats), one per
    poll, with a clock that moves a second per sleep."""
    ex = flow.Executor.__new__(flow.Executor)
    ex.options, ex.io, ex.steps = _Options(timeout), type("IO", (), {"stderr": io.StringIO()})(), []
    ex._tty, ex._progress, ex.journal = False, False, _Journal()
    now, reads = [0.0], []

    def get(kind, namespace, name):
        status = statuses[min(len(reads), len(statuses) - 1)]
        reads.append(status)
        return None if status is None else o.binding(name, "fp8_e4m3", ns=namespace, domain="d2", status=status)

    ex.get, ex.clock = get, lambda: now[0]
    ex.sleep = lambda s: now.__setitem__(0, now[0] + max(s, 1.0))
    return ex, reads


STEP = recover.Wait(recover.ref(recover.BINDING_KIND, "llm-prod", "sgl-fp8-e4m3"), recover.READY)


def test_the_plan_waits_for_ready_not_for_a_phase_the_operator_never_writes():
    assert STEP.to_dict()["for"] == "ready"


def test_ready_with_its_quota_granted_ends_the_wait():
    ex, reads = _executor([None, {}, {"phase": "Provisioning", "phaseMessage": "QuotaGranted has not been observed yet"},
                           o.binding_status("d2", granted=False), o.binding_status("d2")])
    assert ex._wait(4, STEP) == "done (phase Ready, QuotaGranted=True, after 4s)"
    assert len(reads) == 5


def test_a_contested_domain_ends_the_wait_at_once_naming_the_binding_and_the_operators_message():
    ex, reads = _executor([{}, o.binding_status("d2", contested_by=["team-b/raced"])], timeout=600)
    with pytest.raises(PluginError) as err:
        ex._wait(4, STEP)
    text = str(err.value)
    assert text.startswith("KVCachePoolBinding llm-prod/sgl-fp8-e4m3 will not become ready: phase Error, "
                           "condition DomainExclusive=False (DomainClaimedByMultipleBindings): ")
    assert 'reuse domain "d2" is also claimed by team-b/raced' in text and "delete one of them" in text
    assert len(reads) == 2                  # no waiting out the 600 s


def test_a_binding_being_deleted_ends_the_wait():
    ex, _ = _executor([{"phase": "Deleting", "phaseMessage": "deletion is held"}])
    ex.get = lambda kind, ns, name: {**o.binding(name, "fp8_e4m3", ns=ns, status={"phase": "Deleting"}),
                                     "metadata": {"name": name, "namespace": ns,
                                                  "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    with pytest.raises(PluginError, match="will not become ready: it is being deleted"):
        ex._wait(4, STEP)


@pytest.mark.parametrize("status, said", [
    ({"phase": "Bound"}, "phase Bound"),        # what the old wait wanted: not the operator's word
    (o.binding_status("d2", granted=False), 'phase Error: the master grants reuse domain "d2" zero bytes'),
    ({}, "no phase yet"),                       # an unserved pool: the operator never writes the Binding
])
def test_what_never_reaches_ready_times_out_saying_the_last_status(status, said):
    ex, _ = _executor([status], timeout=5)
    with pytest.raises(PluginError) as err:
        ex._wait(4, STEP)
    assert str(err.value).startswith("timed out after 5s waiting until KVCachePoolBinding llm-prod/sgl-fp8-e4m3 "
                                     f"is ready ({said}")
