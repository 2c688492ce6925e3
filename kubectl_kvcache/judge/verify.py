"""Judge every pool-attached engine container: what it will run with, against its Binding.

Pure: a snapshot in, a report out. Which Pods count (controlled by a pool-attached
ModelDeployment and carrying one of its roles, or opted into injection), which container is
the engine (`main`, or the injection annotation's), and the verdict.
"""

from __future__ import annotations

from kubectl_kvcache import engine as model
from kubectl_kvcache.judge import capacity_sum, fixes, holds, setting as setting_mod
from kubectl_kvcache.operator import api, records, renderer, webhooks
from kubectl_kvcache.engine import CachedPredict, Prediction, predict
from kubectl_kvcache.record import Record
from kubectl_kvcache.operator.records import NOT_SERVED
from kubectl_kvcache.judge.statuses import (MEANINGS, MISMATCH, MISSING, NO_POD, OK, REJECTED,  # noqa: F401
                                            STATUSES, UNKNOWN, WILL_REJECT)

PARSE_ERROR_EXIT = 2
CRASH_LOOP = "CrashLoopBackOff"

# How a replica stands in the rollout (verify's per-deployment line, `verify --wait`):
DONE = "done"                   # runs the expected value: OK, running, ready (as far as reported), not terminating
CRASHING = "crash-looping"      # the engine container is in CrashLoopBackOff, or REJECTED and exited with code 2
TO_ROLL = "to-roll"             # not rolled (MISSING), Pending, not ready, an old replica terminating, or
                                # judged while the Setting is in flight (UNKNOWN, cause `setting`)
NOT_CREATED = "not-created"     # NO-POD: a replica the role declares that has no Pod (not created, or being replaced)
STUCK = "stuck"                 # MISMATCH, UNKNOWN, REJECTED not crashed yet, a take-over role: rolling won't fix it
PROGRESSES = (DONE, CRASHING, TO_ROLL, NOT_CREATED, STUCK)


class Item(Record):
    __slots__ = ("namespace", "pod", "container", "owner", "role", "engine", "engine_version", "binding",
                 "expected", "effective", "status", "reason", "occurrences", "version_source", "winner",
                 "container_spec", "fix", "recover", "state", "takeover", "slot", "engine_data", "cause", "stale",
                 "policy", "observed", "exit_cause", "node", "capacity", "gpu")
    __hash__ = None     # mutable: judged field by field

    def __init__(self, namespace: str, pod: str | None, container: str | None, owner: dict | None, role: str | None,
                 engine: str | None, engine_version: str | None, binding: str | None, expected: str | None,
                 effective: str | None, status: str, reason: str, occurrences: list[dict] | None = None,
                 version_source: str | None = None, winner: int | None = None, container_spec: dict | None = None,
                 fix: str = "", recover: bool = False, state: dict | None = None, takeover: bool = False,
                 slot: int | None = None, engine_data: dict | None = None, cause=None, stale: str | None = None,
                 policy=None, observed=None, exit_cause=None, node: str | None = None,
                 capacity=None, gpu=None):
        self.namespace = namespace
        self.pod = pod
        self.container = container
        self.owner = owner
        self.role = role
        self.engine = engine
        self.engine_version = engine_version
        self.binding = binding
        self.expected = expected
        self.effective = effective
        self.status = status
        self.reason = reason
        self.occurrences = [] if occurrences is None else occurrences
        self.version_source = version_source
        self.winner = winner
        self.container_spec = container_spec   # kept for the per-Pod argv listing
        self.fix = fix                          # the next step for a non-OK item, in check's words
        self.recover = recover                  # the fix is the guide's recovery of its Binding
        self.state = state                      # the Pod's state (None: no Pod); see pod_state()
        self.takeover = takeover
        self.slot = slot                        # NO-POD rows: which missing replica of the role
        self.engine_data = engine_data          # set when the release is newer than the engine data
        self.cause = cause                      # UNKNOWN: what would decide it (model.Cause)
        self.stale = stale                      # an operator Pod: why it was not rendered from the spec as it
                                                # is now ("" when it was; None when not told: see stale_reason)
        self.policy = policy                    # judge.policy.Effect: what a policy rule did to it (None: nothing)
        self.observed = observed                # engine.words.Observed: what the engine itself reports (None: unread)
        self.exit_cause = exit_cause            # engine.crash.ExitCause: why its last container died, in its words
        self.node = node                        # the Pod's spec.nodeName (None: no Pod, or not scheduled yet)
        self.capacity = capacity                # engine.capacity.Capacity: its KV cache's tokens, in its words (None: unread)
        self.gpu = gpu                          # engine.gpu.Gpu: its Node's GPU as the labels say (None: not read)

    def to_dict(self):
        return {
            "namespace": self.namespace, "pod": self.pod, "container": self.container, "owner": self.owner,
            "role": self.role, "engine": self.engine, "engineVersion": self.engine_version,
            "binding": self.binding, "expected": self.expected, "effective": self.effective,
            "status": self.status, "reason": self.reason, "fix": self.fix, "occurrences": self.occurrences,
            "state": self.state, "node": self.node,
        } | ({"engineData": self.engine_data} if self.engine_data else {}) | (
            {"cause": self.cause.to_dict()} if self.cause is not None and self.status == UNKNOWN else {}) \
          | ({"notRolled": self.stale} if self.stale else {}) \
          | ({"severity": self.policy.now or self.policy.was, "policy": self.policy.to_dict()}
             if self.policy is not None else {}) \
          | ({"observed": self.observed.to_dict() | {"agrees": self.observed_agrees}}
             if self.observed is not None else {}) \
          | ({"exitCause": self.exit_cause.to_dict()} if self.exit_cause is not None else {}) \
          | ({"capacity": self.capacity.to_dict()} if self.capacity is not None else {}) \
          | ({"gpu": self.gpu.to_dict()} if self.gpu is not None else {})
        # (the policy: as a check finding, its severity now, policy's the one it had)

    @property
    def observed_agrees(self) -> bool | None:
        """Whether the engine's own report is the predicted value (None: nothing observed, or
        nothing predicted to hold it against: only SGLang's torch dtype, an UNKNOWN row). Its
        reports disagreeing with each other (Observed.conflict) is never agreement: False."""
        if self.observed is not None and self.observed.conflict:
            return False
        seen = self.observed.dtype if self.observed is not None else None
        if seen is None or self.effective is None or self.status in (UNKNOWN, NO_POD):
            return None
        return seen == self.effective

    @property
    def rolling(self) -> bool:
        """An OK replica of an accounted deployment that is not done yet: an older render the
        rollout still replaces, Pending, not ready, terminating, or crash-looping."""
        return self.status == OK and self.owner is not None and self.state is not None and self.progress != DONE

    @property
    def startup_failed(self) -> bool:
        """Its engine died after the parse (the previous container's log names the error)."""
        return self.exit_cause is not None and self.exit_cause.kind == "startup"

    @property
    def key(self):
        """What identifies this row across judgements (a replica without a Pod: its deployment, role, slot)."""
        return (self.namespace, self.pod) if self.pod is not None else \
            (self.namespace, None, (self.owner or {}).get("name"), self.role, self.slot)

    @property
    def deployment(self) -> str | None:
        return self.owner["name"] if self.owner else None

    @property
    def terminating(self) -> bool:
        return bool(self.state and self.state.get("terminating"))

    @property
    def confirmed_rejected(self) -> bool:
        """REJECTED and the engine container already exited with the parser's code 2, or its
        previous log holds the parser's error."""
        return self.status == REJECTED and ((self.state or {}).get("lastExitCode") == PARSE_ERROR_EXIT
                                            or (self.exit_cause is not None and self.exit_cause.kind == "rejected"))

    @property
    def progress(self) -> str:
        """DONE, CRASHING, TO_ROLL, NOT_CREATED or STUCK (see above). A replica without a Pod is
        NOT_CREATED, never "to roll": there is nothing there to roll (issue 48)."""
        state = self.state or {}
        if self.status == NO_POD:
            return NOT_CREATED
        if state.get("waiting") == CRASH_LOOP or self.confirmed_rejected or self.startup_failed:
            return CRASHING
        if self.terminating:
            return TO_ROLL
        if self.status == OK:
            running = state.get("phase") in ("Running", "", None) and state.get("ready") is not False
            return DONE if running and not self.stale else TO_ROLL
        if self.status in (MISSING, WILL_REJECT) and not self.takeover:
            return TO_ROLL
        if in_flight_only(self):
            return TO_ROLL      # the Setting in flight: the operator rolls it once it takes the change in
        return STUCK


class RoleProgress(Record):
    __slots__ = ("name", "desired", "pods", "terminating", "status")
    __hash__ = None     # mutable

    def __init__(self, name: str, desired: int, pods: int, terminating: int, status: records.RoleStatus | None):
        self.name = name
        self.desired = desired
        self.pods = pods                    # Pods that are not terminating
        self.terminating = terminating
        self.status = status

    def to_dict(self):
        s = self.status
        return {"name": self.name, "desired": self.desired, "pods": self.pods, "terminating": self.terminating,
                "statusDesired": s.desired if s else None, "statusReady": s.ready if s else None}


class DeploymentProgress(Record):
    """One pool-attached ModelDeployment's replicas, as the rollout sees them."""

    __slots__ = ("namespace", "name", "binding", "expected", "roles", "counts", "stuck", "unbound", "setting_on",
                 "hold", "up_to_date", "refused", "domain", "unread")
    __hash__ = None     # mutable

    def __init__(self, namespace: str, name: str, binding: str | None, expected: str | None,
                 roles: list[RoleProgress], counts: dict, stuck: dict, unbound: bool = False,
                 setting_on: bool = True, hold: holds.Hold | None = None, up_to_date: bool | None = None,
                 refused=None, domain: str = "", unread: bool = False):
        self.namespace = namespace
        self.name = name
        self.binding = binding
        self.expected = expected
        self.roles = roles
        self.counts = counts                # DONE / CRASHING / TO_ROLL / NOT_CREATED / STUCK -> replica rows
        self.stuck = stuck                  # status -> number, for the STUCK rows
        self.unbound = unbound              # the Binding spec.kvCache.poolRef.name names does not exist
        self.setting_on = setting_on        # why `expected` is None when the Binding is there
        self.hold = hold                    # the operator holds the rollout (judge/holds.py)
        self.up_to_date = up_to_date        # ReplicasUpToDate=True for this generation (None: not written)
        self.refused = refused              # load/events.Refusal: replicas without a Pod that its controller
                                            # says it cannot create (None: none said, or not read)
        self.domain = domain                # what the operator's DomainRegistered/status.kvCache add to the
                                            # Binding read ("" nothing: holds.domain_said)
        self.unread = unread                # unbound only as far as the input goes: files without the Binding

    @property
    def desired(self):
        return sum(r.desired for r in self.roles)

    @property
    def complete(self) -> bool:
        """Every replica runs the expected value: no row is anything but done, none is missing; and
        where the operator writes ReplicasUpToDate, it says True for the current generation."""
        return self.counts[DONE] >= self.desired and not (self.counts[CRASHING] or self.counts[TO_ROLL]
                                                          or self.counts[NOT_CREATED] or self.counts[STUCK] or self.unbound
                                                          or self.hold or self.up_to_date is False)

    def to_dict(self):
        return {"namespace": self.namespace, "name": self.name, "binding": self.binding,
                "expected": self.expected, "desired": self.desired, "done": self.counts[DONE],
                "toRoll": self.counts[TO_ROLL], "notCreated": self.counts[NOT_CREATED],
                "crashLooping": self.counts[CRASHING],
                "stuck": self.counts[STUCK], "stuckStatuses": self.stuck, "complete": self.complete,
                **({"bindingMissing": True} if self.unbound else {}),
                **({"held": self.hold.to_dict()} if self.hold else {}),
                **({"operatorDomain": self.domain} if self.domain else {}),
                **({"createRefused": self.refused.to_dict()} if self.refused else {}),
                **({"replicasUpToDate": self.up_to_date} if self.up_to_date is not None else {}),
                "roles": [r.to_dict() for r in self.roles]}


class Report(Record):
    __slots__ = ("setting_value", "setting_source", "items", "deployments", "accounted", "suppressed", "policy",
                 "verdict", "in_flight")
    __hash__ = None     # mutable

    def __init__(self, setting_value: bool, setting_source: str, items: list[Item],
                 deployments: list[DeploymentProgress] | None = None, accounted: bool = True,
                 suppressed: list[Item] | None = None, policy=None, verdict=None, in_flight=None):
        self.setting_value = setting_value
        self.setting_source = setting_source
        self.items = items
        self.deployments = [] if deployments is None else deployments
        self.accounted = accounted          # replicas without a Pod were looked for (not with -l or named Pods)
        self.suppressed = [] if suppressed is None else suppressed  # replicas a policy ignored (judge/policy.py)
        self.policy = policy        # judge.policy.Applied: the policy in force and what it changed (None: none)
        self.verdict = verdict      # judge.verdict.Verdict: what fails the run, decided once (None: not yet)
        self.in_flight = in_flight  # judge.setting.InFlight: the Setting's spec.value not taken in (None: settled)

    def summary(self):
        counts = {"total": len(self.items)}
        for status in STATUSES:
            counts[status] = sum(1 for i in self.items if i.status == status)
        return counts

    def to_dict(self):
        verdict = self.verdict

        def rows(where, items):
            if verdict is None:
                return [i.to_dict() for i in items]
            return [i.to_dict() | verdict.of(where, n).to_dict() for n, i in enumerate(items)]

        return {"setting": {"value": self.setting_value, "source": self.setting_source} | (
                    {"inFlight": self.in_flight.to_dict()} if self.in_flight is not None else {}),
                "items": rows("items", self.items),
                "summary": self.summary(),
                "deployments": [d.to_dict() for d in self.deployments] if self.accounted else None} | (
            {"policy": self.policy.to_dict(), "suppressed": rows("suppressed", self.suppressed)}
            if self.policy is not None else {}) | ({"verdict": verdict.to_dict()} if verdict is not None else {}) | (
            {"capacity": capacity_sum.totals(self.items)} if capacity_sum.observed(self.items) else {})


# Why an OK row fails all the same (the verdict's codes beside the statuses; judge/verdict.py):
CONTRADICTED = "OBSERVED-DIFFERS"   # the engine's own report is another value than the prediction
STARTUP_FAILED = "STARTUP-FAILED"   # its engine died at start-up after the parse (its previous log says so)
ROLLING = "ROLLING"                 # OK as rendered, but its deployment still rolls it: not done
OK_FAILURES = {
    CONTRADICTED: "the engine's own report (its log or /metrics) contradicts the predicted value",
    STARTUP_FAILED: "the engine dies at start-up after its arguments were parsed (its previous log says so)",
    ROLLING: "OK as rendered, but its deployment still rolls the replica (without --fail-on)",
}


def ok_failure(item: Item, fail_on=()) -> str | None:
    """Why an OK replica fails the run all the same (a code of OK_FAILURES), None when it does not:
    the engine says otherwise than the prediction, or died after its parse (never green, whatever
    --fail-on says); or, without --fail-on, its deployment still rolls it."""
    if item.status != OK:
        return None
    if item.observed_agrees is False:
        return CONTRADICTED
    if item.startup_failed:
        return STARTUP_FAILED
    if not fail_on and item.rolling:
        return ROLLING
    return None


def severity(item: Item, fail_on=()) -> str | None:
    """What a replica weighs, in check's words, for the policy and the verdict: `error` when it
    makes verify exit 1 (its status is one of --fail-on, default every status but OK; or an OK
    row fails all the same: ok_failure), `warning` when --fail-on tolerates it, None when OK;
    the severity a policy rule gave it when one did."""
    if item.policy is not None:
        return item.policy.now
    if item.status == OK:       # the words are check's SEVERITIES (judge.checks imports this module)
        return "error" if ok_failure(item, fail_on) else None
    return "error" if item.status in (fail_on or STATUSES) else "warning"


def fails(item: Item, fail_on=()) -> bool:
    """Whether this replica makes verify exit 1 (the one rule: judge/verdict.py reads it for the
    exit code and every report)."""
    return severity(item, fail_on) == "error"


class Candidate(Record):
    """An engine container to judge, with what its owner declares."""

    __slots__ = ("pod", "container_name", "owner", "role", "declared_engine", "declared_version", "binding",
                 "manufacturer", "takeover", "problem")

    def __init__(self, pod: records.Pod, container_name: str | None, owner: dict | None, role: str | None,
                 declared_engine: str | None, declared_version: str | None, binding: str | None,
                 manufacturer: str | None = None, takeover: bool = False, problem: str = ""):
        self.pod = pod
        self.container_name = container_name
        self.owner = owner
        self.role = role
        self.declared_engine = declared_engine
        self.declared_version = declared_version
        self.binding = binding
        self.manufacturer = manufacturer
        self.takeover = takeover
        self.problem = problem              # set when the candidate itself cannot be judged


def candidates(snapshot: records.Snapshot) -> list[Candidate]:
    found = []
    for pod in snapshot.pods:
        cand = candidate(pod, snapshot)
        if cand is not None:
            found.append(cand)
    found.sort(key=lambda c: (c.pod.namespace, c.pod.name))
    return found


def candidate(pod: records.Pod, snapshot: records.Snapshot) -> Candidate | None:
    """The engine container of one Pod to judge, or None (not a pool-attached engine replica)."""
    if pod.md_controlled:
        return _deployment_candidate(pod, snapshot)
    if pod.opted_in:
        return _injected_candidate(pod)
    return None


def _deployment_candidate(pod, snapshot):
    name = pod.owner[2]
    owner = {"kind": "ModelDeployment", "name": name}
    md = snapshot.deployments.get((pod.namespace, name))
    container = api.ENGINE_CONTAINER
    role_name = pod.labels.get(api.COMPONENT_LABEL)
    if md is None:
        return Candidate(pod, container, owner, role_name, None, None, None,
                         problem=f"its ModelDeployment {name} {snapshot.absent(pod.namespace)}")
    if not md.kv_cache:
        return None
    role = md.role(role_name) if role_name else None
    if role is None:
        return None     # a router or elastic-EP head Pod: not an engine replica
    # The Pod runs its own image: the role's stated image (model_deployment_render.go,
    # renderModelDeploymentPodTemplate: a stated image always wins), read from its tag; else the image
    # synthesized from spec.engine.version (SynthesizeModelDeploymentImage), whose release it is.
    return Candidate(pod, container, owner, role.name, md.engine, None if role.image else md.engine_version,
                     md.binding, takeover=bool(role.command))


def _role_release(md, role) -> tuple[str | None, str]:
    """The release a role's replicas run, as text, and where it was read (engine.releases'
    sources): its stated image's (model.ROLE_IMAGE), else spec.engine.version (the synthesized
    image's; model_deployment_render.go: model.SPEC_VERSION); (None, model.UNREAD) when neither
    names one (an image whose tag names no release, no spec.engine.version)."""
    if role.image:
        found = model.read_image(role.image, model.normalise_engine(md.engine)).release
        return (str(found), model.ROLE_IMAGE) if found is not None else (None, model.UNREAD)
    return (md.engine_version, model.SPEC_VERSION) if md.engine_version else (None, model.UNREAD)


def _injected_candidate(pod):
    ann = pod.annotations
    binding = ann.get(api.ANNOTATION_PREFIX + "binding")
    engine = ann.get(api.ANNOTATION_PREFIX + "engine")
    container = ann.get(api.ANNOTATION_PREFIX + "container")
    role = ann.get(api.ANNOTATION_PREFIX + "role")
    manufacturer = ann.get(api.ANNOTATION_PREFIX + "manufacturer")
    target, problem = records.injection_target(ann, pod.containers)
    if target is not None:
        container = target["name"]
    if not problem and not binding:
        problem = f"no {api.ANNOTATION_PREFIX}binding annotation"
    if not problem and not model.normalise_engine(engine):
        problem = f"{api.ANNOTATION_PREFIX}engine is {engine!r}, not vLLM or SGLang"
    return Candidate(pod, container, None, role, engine, None, binding, manufacturer, problem=problem)


def _occurrences(prediction: Prediction):
    return [{"source": o.source, "index": o.index, "text": o.text, "value": o.value}
            for o in prediction.occurrences]


OFF_REASON = "the Setting is off: nothing is expected"
NOT_SERVED_REASON = ("the cluster does not serve the Setting's API group yet (before the upgrade): nothing is "
                     "expected yet")


def judge_candidate(cand: Candidate, snapshot: records.Snapshot, setting_on: bool, predictor=predict,
                    off_reason=OFF_REASON) -> Item:
    """One engine container judged with the Setting as the operator acts on it (`setting_on`, from
    status.value). While the Setting is in flight (judge/setting.py in_flight: spec.value asks for
    another value) it is judged with the value asked for too: a row whose verdict or expected value
    the two differ on is not settled and says UNKNOWN (cause `setting`), with both verdicts; a
    REJECTED Pod stays REJECTED (its engine exits on its argv whatever is expected)."""
    item = _settled(cand, snapshot, setting_on, predictor, off_reason)
    flight = setting_mod.in_flight(snapshot.setting) if off_reason != NOT_SERVED_REASON else None
    if flight is None or flight.asked == setting_on or item.status == UNKNOWN:
        return item
    asked = _settled(cand, snapshot, flight.asked, predictor, off_reason)
    note = setting_mod.in_flight_message(flight)
    if item.status == REJECTED or (item.status, item.expected) == (asked.status, asked.expected):
        item.reason += f"; {note}"
        return item
    now, then = _verdict_words(item), _verdict_words(asked)
    item.reason = (f"{note}: judged with status.value it is {now}, with spec.value it would be {then}; not "
                   f"settled until the operator takes the change in")
    item.status, item.expected, item.stale = UNKNOWN, None, None
    item.cause = model.Cause("setting", f"Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} spec.value "
                                        f"{flight.spec_value!r}, status.value {flight.status_value!r}")
    item.fix, item.recover = setting_mod.IN_FLIGHT_FIX, False
    return item


def in_flight_only(item: Item) -> bool:
    """UNKNOWN only because the Setting is in flight (cause `setting`): what the engine runs with
    (`effective`) is known; what it should run with is not settled."""
    return item.status == UNKNOWN and item.cause is not None and item.cause.code == "setting"


def _verdict_words(item: Item) -> str:
    expected = "nothing expected" if item.expected is None else f"expected {item.expected!r}"
    return f"{item.status} ({expected})"


def _settled(cand: Candidate, snapshot: records.Snapshot, setting_on: bool, predictor=predict,
             off_reason=OFF_REASON) -> Item:
    item = _judge(cand, snapshot, setting_on, predictor, off_reason)
    # Before the upgrade (the Setting's API not served) the release running renders no dtype, and
    # what else it renders is not modelled here: whether a Pod is of its current render is not told.
    if cand.owner and item.status in (OK, MISMATCH, MISSING, WILL_REJECT, REJECTED) and off_reason != NOT_SERVED_REASON:
        md = snapshot.deployments.get((item.namespace, item.deployment or ""))
        item.stale = stale_reason(item, md.role(item.role) if md is not None and item.role else None, setting_on)
        if item.stale and item.status == OK:
            item.reason += f"; not rolled yet: {item.stale}"
    if item.status != OK:
        fix = fix_for(item, cand, snapshot, setting_on)
        item.fix, item.recover = fix.text, fix.recover
    return item


def stale_reason(item: Item, role, setting_on: bool = True) -> str | None:
    """Why an operator Pod was not rendered from its deployment's spec as it is now ("" when it
    was; None when it cannot be told). The operator marks each replica only with a fingerprint of
    the whole rendered Pod (annotation modeldeployment.gpustack.ai/pod-spec-hash over labels,
    annotations and spec: pkg/worker/controllers/worker/model_deployment_render.go,
    modelDeploymentPodSpecHash), which covers the connector it synthesizes from the Binding and
    cannot be computed from outside; no generation or template hash is on the Pod. So the part of
    the render that the Setting, the Binding and the role decide is read off the argv the renderer
    builds (renderModelDeploymentPod: base command, the connector arguments, then the role's
    extraArgs; a take-over role's command alone): the role's current extraArgs (or command) are
    there, and the operator's own --kv-cache-dtype (those before the extraArgs) is the Binding's
    dtype when one is expected (`item.expected`: the Setting on, beside a store) and absent when
    none is (the Setting off, or no store)."""
    spec = item.container_spec
    if role is None or spec is None:
        return None
    command = list(spec.get("command") or ())
    if role.command:
        return "" if command == list(role.command) else "its command is not the role's command as the spec has it now"
    start = extra_args_start(role, command)
    if role.extra_args and start is None:
        return "the role's extraArgs as the spec has them now are not in its command"
    own = [o for o in item.occurrences if o.get("source") == "command" and (start is None or o["index"] < start)]
    if item.expected is None:
        if not own:
            return ""
        last = own[-1]
        why = "no store is rendered" if setting_on else "the Setting is off"
        return (f"it still carries the operator's --kv-cache-dtype {last.get('value')!r} (command[{last['index']}]), "
                f"which the operator no longer renders ({why}): it drops it when it rolls")
    if not own:
        return ("the operator's --kv-cache-dtype is not in its command: it was rendered before the Setting went on, "
                "and rolls")
    if own[-1].get("value") != item.expected:
        return (f"the operator's --kv-cache-dtype is {own[-1].get('value')!r} (command[{own[-1]['index']}]), not the "
                f"Binding's {item.expected!r}: it was rendered from another spec, and rolls")
    return ""


def _judge(cand: Candidate, snapshot: records.Snapshot, setting_on: bool, predictor=predict,
           off_reason=OFF_REASON) -> Item:
    pod = cand.pod
    binding = snapshot.bindings.get((pod.namespace, cand.binding)) if cand.binding else None
    expected = binding.dtype if (binding and setting_on) else None
    container = pod.container(cand.container_name) if cand.container_name else None
    item = Item(pod.namespace, pod.name, cand.container_name, cand.owner, cand.role,
                model.normalise_engine(cand.declared_engine), None, cand.binding, expected, None, UNKNOWN, "",
                state=pod_state(pod, cand.container_name), takeover=cand.takeover,
                node=pod.node or None)
    if cand.problem:
        item.reason = cand.problem
        item.cause = model.Cause("spec", f"ModelDeployment {cand.owner['name']}" if cand.problem.startswith(
            "its ModelDeployment") and cand.owner else f"the {api.ANNOTATION_PREFIX}* annotations")
        return item
    if container is None:
        item.reason = f"no container named {cand.container_name}"
        item.cause = model.Cause("spec", f"container {cand.container_name}")
        return item
    item.container_spec = container
    pred = predictor(container, cand.declared_engine, cand.declared_version, cand.manufacturer)
    item.engine = pred.engine
    item.engine_version = pred.version
    item.version_source = pred.version_source
    if pred.newer_than_data:
        item.engine_data = {"judgedWith": pred.judged_with, "newerThanData": True}
    item.occurrences = _occurrences(pred)
    item.winner = pred.winner
    exit_code = pod.exit_codes.get(container["name"])
    confirmed = exit_code == PARSE_ERROR_EXIT

    if pred.outcome == "rejected":
        item.status = REJECTED
        item.reason = pred.reason + ("; confirmed: the container last exited with code 2" if confirmed else "")
        return item
    if pred.outcome == "unknown":
        item.reason = pred.reason
        item.cause = pred.cause
        return item
    item.effective = pred.effective if pred.effective is not None else "auto"
    note = "; the container last exited with code 2, which this prediction does not explain" if confirmed else ""
    if not setting_on:
        item.status = OK
        item.reason = off_reason + "; the engine starts (" + pred.reason + ")" + note
        return item
    if binding is None and cand.binding:
        item.reason = f"Binding {cand.binding} not found in namespace {pod.namespace}"
        item.cause = model.Cause("spec", f"Binding {cand.binding}")
        return item
    if binding is None:
        # Not from a cluster's objects (decode refuses spec.kvCache without a poolRef name; an
        # injected Pod without the annotation is a problem above), but a Candidate built otherwise
        # is UNKNOWN, not a crash.
        where = (f"ModelDeployment {cand.owner['name']} spec.kvCache.poolRef.name" if cand.owner
                 else f"annotation {api.BINDING_ANNOTATION}")
        item.reason = f"no Binding is named ({where})"
        item.cause = model.Cause("spec", where)
        return item
    if binding.dtype is None:
        item.reason = f"Binding {binding.name} has no spec.domain.dtype"
        item.cause = model.Cause("spec", f"Binding {binding.name} spec.domain.dtype")
        return item
    store = renderer.store_view(container, pred.engine) if not cand.takeover else None
    if store is not None and store.rendered is False:
        # No store rendered: the operator writes no --kv-cache-dtype for this replica, so none is
        # expected, and rolling will not bring one (inject/vllm.go:renderVLLM, hasStore).
        item.expected = None
        item.status = OK
        item.reason = f"{store.reason}: {renderer.NO_STORE_RULE}; the engine starts ({pred.reason})" + note
        return item
    if not pred.occurrences:
        # Not rolled yet; a replica that will be given a spelling its engine rejects is not merely
        # missing the flag: when it rolls (or is recreated and admitted) it crash-loops. A release
        # not known (a nightly tag): only when every release it may be rejects it.
        rejects = [refused(p, binding.dtype, container) for p in _profiles(pred, container)]
        item.status = WILL_REJECT if (all(rejects) and not cand.takeover) else MISSING
        item.reason = _missing_reason(cand, binding, pred) + note
    elif pred.effective == expected:
        item.status = OK
        item.reason = pred.reason + note
    else:
        item.status = MISMATCH
        item.reason = pred.reason + f", not the Binding's {expected!r}" + _mismatch_hint(cand) + note
    return item


def _profiles(pred, container) -> tuple:
    """The profile of each release the prediction was judged across: its one release, or (its
    image names none: a nightly or moving tag) every release it may be, as engine/predict's
    `_releases` spans them. Never a profile of no release."""
    version = model.parse_version(pred.version)
    if version is not None:
        return (model.profile(pred.engine, version),)
    seen = model.read_image((container or {}).get("image") or "", pred.engine)
    span = model.releases_before(pred.engine, seen.before) if seen.before else model.all_releases(pred.engine)
    return tuple(model.profile(pred.engine, v) for v in span)


def refused(profile, dtype, container) -> bool:
    """The release refuses `dtype`: its parser, or its attention backends after the parse on the
    platform the container's image says (engine/attention.py)."""
    if dtype not in profile.accepted:
        return True
    platform = model.read_image((container or {}).get("image") or "", profile.engine).platform
    return model.refuses(profile.engine, profile.version, dtype, platform)


def _missing_reason(cand, binding, pred):
    if cand.takeover:
        text = "take-over role (command set): the operator adds no --kv-cache-dtype; the role's command must"
    elif cand.owner:
        text = "no --kv-cache-dtype in the argv: the replica has not rolled since the Setting went on"
    else:
        text = "no --kv-cache-dtype in the args: the Pod was created before the webhook injected it"
    container = cand.pod.container(cand.container_name)
    profiles = _profiles(pred, container)
    rejecting = [p for p in profiles if refused(p, binding.dtype, container)]
    if len(profiles) > 1:       # the image names no release (a nightly tag): what each may do
        why = model.read_image((container or {}).get("image") or "", pred.engine).why
        span = f"{profiles[0].label}-{profiles[-1].version}"
        text += f"; release unknown ({why}): "
        if not rejecting:
            text += f"every release it may be ({span}) accepts {binding.dtype!r}"
        elif len(rejecting) == len(profiles):
            text += f"every release it may be ({span}) rejects {binding.dtype!r}" + \
                ("" if cand.takeover else ": it will crash-loop when it rolls")
        else:
            text += (f"{len(rejecting)} of the {len(profiles)} releases it may be ({span}) reject "
                     f"{binding.dtype!r} ({', '.join(str(p.version) for p in rejecting[:3])}"
                     f"{', ...' if len(rejecting) > 3 else ''})" + ("" if cand.takeover else
                                                                    ": it may crash-loop when it rolls"))
    elif rejecting and not cand.takeover:
        text += f"; when it rolls, {profiles[0].label} will reject {binding.dtype!r}: it will crash-loop"
    return text


def _mismatch_hint(cand):
    if cand.takeover:
        return " (take-over role: the operator adds nothing; its own command decides)"
    if cand.owner:
        return " (a role's own later flag wins over the operator's)"
    return ""


# -- the fix: what to do about a non-OK item, in check's words -------------------------------------

recover_command = fixes.recover_command      # render/verify.py's "next:" line names it too


def _entries(positions, prefix):
    return " and ".join(f"{prefix}[{j}]" for j in positions)


def _own_positions(occurrences, source_argv, offset=0, limit=None):
    """The argv positions (relative to `offset`) of every occurrence the parser read, each with
    the separate value it took: removing the flag alone would leave the value a stray positional."""
    positions = []
    for occ in occurrences:
        j = occ["index"] - offset
        if j < 0 or (limit is not None and j >= limit):
            continue
        positions.append(j)
        if "=" not in occ["text"] and occ.get("value") is not None and j + 1 < (limit or len(source_argv)):
            positions.append(j + 1)
    return sorted(set(positions))


def _abbreviations(argv, profile):
    """Positions of entries that abbreviate --kv-cache-dtype (an ambiguous one never becomes an
    occurrence: the parser exits on it), each with the word after it that was meant as its value."""
    positions = []
    for j, text in enumerate(argv):
        name = text.split("=", 1)[0]
        if profile is not None and profile.underscores:
            name = name.replace("_", "-")
        if len(name) > 4 and model.DTYPE_OPTION.startswith(name) and name.startswith("--"):
            positions.append(j)
            if "=" not in text and j + 1 < len(argv) and not argv[j + 1].startswith("-"):
                positions.append(j + 1)
    return sorted(set(positions))


def _has_own_flag(extra_args, profile) -> bool:
    """Whether the role's extraArgs, as the spec has them now, still pass --kv-cache-dtype (in any
    spelling the engine reads, abbreviations included)."""
    from kubectl_kvcache.judge.checks.engines import EXTRA_ARGS, flag_tokens

    if profile is None:
        return True         # the engine is not known: the flag cannot be ruled out
    return bool(flag_tokens([model.Token(a, EXTRA_ARGS, j) for j, a in enumerate(extra_args)], profile))


def _extra_args_start(role, command):
    """Where the role's extraArgs sit in the rendered command (the operator appends them after its
    own arguments), or None when this Pod was rendered from another spec."""
    extra = list(role.extra_args)
    if not extra:
        return None
    for s in range(len(command) - len(extra), -1, -1):
        if list(command[s:s + len(extra)]) == extra:
            return s
    return None


def _nearest(item, profile):
    from kubectl_kvcache.judge.nearest_dtype import nearest_spelling

    values = [o.get("value") for o in item.occurrences if o.get("value") not in (None, *profile.accepted)]
    near = nearest_spelling(values[-1], profile.accepted) if values else None
    return f" ({values[-1]!r} is not a spelling {profile.label} accepts; the nearest is {near!r})" if near else ""


class Fix(Record):
    """What to do about a non-OK item: one line in check's words, and whether it is `recover`
    (the Binding's dtype is one the engine rejects: no edit of the spec helps)."""

    __slots__ = ("text", "recover")

    def __init__(self, text: str, recover: bool = False):
        self.text = text
        self.recover = recover


class _FixContext(Record):
    """What a fix reads about an item's Pod: its Binding, its ModelDeployment and role (and the
    role's index in spec.roles), how the fix names what to edit, the engine release's profile."""

    __slots__ = ("pod", "binding", "md", "role_index", "role", "where", "profile", "pool", "absent", "read")

    def __init__(self, pod: records.Pod, binding: records.Binding | None, md: records.Deployment | None,
                 role_index: int | None, role: records.Role | None, where: str, profile, pool=None,
                 absent: str = "does not exist", read: bool = True):
        self.pod = pod
        self.binding = binding
        self.md = md
        self.role_index = role_index
        self.role = role
        self.where = where
        self.profile = profile
        self.pool = pool                    # the Binding's KVCachePool record when read (judge/holds.py)
        self.absent = absent                # how a Binding not there is said (records.Snapshot.absent)
        self.read = read                    # a Binding not there was looked for (a cluster), not left out (files)


def fix_for(item: Item, cand: Candidate, snapshot: records.Snapshot, setting_on: bool) -> Fix:
    """The Fix for a non-OK item: the first step below that has one."""
    ctx = _fix_context(item, cand, snapshot)
    if item.status == UNKNOWN:
        return _release_fix(item, ctx) or _unknown_fix(cand, ctx)
    fix = (_rejected_dtype_fix(item, cand, ctx, setting_on) or _takeover_fix(item, cand, ctx)
           or _not_rolled_fix(item, cand, ctx) or _role_flag_fix(item, cand, ctx, setting_on)
           or _pod_args_fix(item, cand, ctx)
           or Fix("kubectl kvcache check -o describe has the fix for its deployment or template" + _hint(item, ctx)))
    held = None if cand.takeover else _held_fix(item, cand, ctx)
    if held is None:
        return fix
    if fix.text.startswith("nothing to change"):    # the next reconcile does not roll a held replica
        return held
    return Fix(f"{fix.text}; {held.text}", fix.recover)


def _fix_context(item: Item, cand: Candidate, snapshot: records.Snapshot) -> _FixContext:
    pod = cand.pod
    binding = snapshot.bindings.get((pod.namespace, cand.binding)) if cand.binding else None
    md = snapshot.deployments.get((pod.namespace, cand.owner["name"])) if cand.owner else None
    role_index = next((n for n, r in enumerate(md.roles) if r.name == cand.role), None) if md else None
    role = md.roles[role_index] if md is not None and role_index is not None else None
    profile = (model.profile(item.engine, model.parse_version(item.engine_version))
               if item.engine and item.engine_version else None)
    pool = (snapshot.pools or {}).get(binding.pool) if binding is not None and binding.pool else None
    return _FixContext(pod, binding, md, role_index, role,
                       f"ModelDeployment {md.name}" if md else f"Pod {pod.name}", profile, pool,
                       snapshot.absent(pod.namespace), snapshot.source != "file")


def _hint(item: Item, ctx: _FixContext) -> str:
    return _nearest(item, ctx.profile) if ctx.profile else ""


def _release_fix(item: Item, ctx: _FixContext) -> Fix | None:
    """UNKNOWN because the release decides and its image names none (predict.across)."""
    if item.version_source != model.UNREAD or item.cause is None or item.cause.code != "image":
        return None
    where = (f"spec.roles[{ctx.role_index}].image of {ctx.where}" if ctx.role is not None and ctx.role.image
             else f"the image of {ctx.where}")
    return Fix(f"pin {where} to a tag that names its release (e.g. vllm/vllm-openai:v0.29.0, "
               f"lmsysorg/sglang:v0.5.18-cu129): the release decides this dtype and the tag names none")


def _unknown_fix(cand: Candidate, ctx: _FixContext) -> Fix:
    """UNKNOWN: what would decide it."""
    pod = ctx.pod
    if cand.problem.startswith("its ModelDeployment"):
        return Fix(f"check ModelDeployment {(cand.owner or {}).get('name')} in namespace {pod.namespace} by hand")
    if cand.problem:
        return Fix("set the annotations " + ", ".join(f"{api.ANNOTATION_PREFIX}{k}" for k in ("binding", "engine"))
                   + " (and container, with several containers) on the Pod's template")
    if cand.binding and ctx.binding is None:
        return Fix(fixes.missing_binding_fix(pod.namespace, cand.binding, bool(cand.owner)))
    return Fix(f"read the argv by hand: kubectl kvcache verify -n {pod.namespace} {pod.name} lists it with "
               f"every --kv-cache-dtype marked")


def _rejected_dtype_fix(item: Item, cand: Candidate, ctx: _FixContext, setting_on: bool) -> Fix | None:
    """The Binding's dtype itself is what the engine rejects (with the Setting on): recover."""
    binding, profile = ctx.binding, ctx.profile
    dtype = binding.dtype if binding else None
    if (item.status in (REJECTED, MISSING, WILL_REJECT) and setting_on and binding is not None and dtype
            and profile is not None and refused(profile, dtype, item.container_spec) and not cand.takeover):
        return Fix(f"the Binding's dtype {dtype!r} is rejected by {profile.label}: "
                   + fixes.recover_fix(ctx.pod.namespace, binding.name), recover=True)
    return None


def _takeover_fix(item: Item, cand: Candidate, ctx: _FixContext) -> Fix | None:
    """A role whose own command runs the engine (the operator does not render it): edit that command."""
    if not cand.takeover or ctx.role is None or ctx.md is None:
        return None
    path = f"spec.roles[{ctx.role_index}].command of ModelDeployment {ctx.md.name}"
    if item.status == REJECTED:
        return Fix(f"fix {path}: the engine exits on its arguments" + _hint(item, ctx))
    verb = "add" if item.status == MISSING else "set"
    dtype = ctx.binding.dtype if ctx.binding else None
    return Fix(f"{verb} `--kv-cache-dtype {dtype}` in {path} if it should run the Binding's value")


def _held_fix(item: Item, cand: Candidate, ctx: _FixContext) -> Fix | None:
    """A replica of a deployment whose rollout the operator holds (judge/holds.py): the next
    reconcile does not roll it; the hold's cause has to end first."""
    if not cand.owner or ctx.md is None or item.status not in (MISSING, WILL_REJECT, MISMATCH, REJECTED):
        return None
    pool = ctx.pool
    held = holds.hold(ctx.md, ctx.binding, pool, holds.waiting([item], this=True), ctx.absent, ctx.read, "it")
    if held is not None:        # its own case is in the words (holds.waiting): it rolls, or matches again and stays
        return Fix(f"held, not rolling: {held.text}")
    cut = holds.unresolved(ctx.md, ctx.binding, pool)
    during = ("; this replica was created while the connection did not resolve (no connector, no dtype)"
              if holds.created_during_hold(item, cut is not None) else "")
    if during and cut is not None:
        return Fix(f"nothing to change in the spec, but the next reconcile does not fix it: {cut[0]}{during}; "
                   f"{cut[1]}")
    return None


def _not_rolled_fix(item: Item, cand: Candidate, ctx: _FixContext) -> Fix | None:
    """MISSING or WILL_REJECT: the dtype comes with the next render (operator) or Pod (webhook)."""
    if item.status not in (MISSING, WILL_REJECT):
        return None
    if cand.owner:
        return Fix("nothing to change: the operator adds the Binding's dtype when the replica rolls at "
                   f"{ctx.where}'s next reconcile")
    return Fix("recreate the Pod (or let its owner replace it): the webhook appends the Binding's dtype to "
               "Pods created from now on")


def _role_flag_fix(item: Item, cand: Candidate, ctx: _FixContext, setting_on: bool) -> Fix | None:
    """A role's own --kv-cache-dtype in its extraArgs, against the operator's: remove it."""
    role, profile, where = ctx.role, ctx.profile, ctx.where
    if role is None:
        return None
    hint = _hint(item, ctx)
    command = list((item.container_spec or {}).get("command") or ())
    start = _extra_args_start(role, command)
    positions = (_own_positions(item.occurrences, command, start, len(role.extra_args))
                 if start is not None else []) or _abbreviations(role.extra_args, profile)
    if positions:
        return Fix(fixes.remove_own_flag(_entries(positions, f'spec.roles[{ctx.role_index}].extraArgs'), where)
                   + hint)
    if not setting_on and start is not None:
        return Fix(f"nothing to change in the spec: the flag was rendered while the Setting was on, and the "
                   f"replica drops it when it rolls at {where}'s next reconcile")
    if not _has_own_flag(role.extra_args, profile):
        return Fix(fixes.own_flag_gone(where))
    return Fix(f"remove the role's own --kv-cache-dtype from spec.roles[{ctx.role_index}].extraArgs of {where} "
               f"(kubectl kvcache check -o describe names the entries)" + hint)


def _pod_args_fix(item: Item, cand: Candidate, ctx: _FixContext) -> Fix | None:
    """A Pod the webhook injects: its own --kv-cache-dtype in the template's args, against the webhook's."""
    if cand.owner:
        return None
    args = list((item.container_spec or {}).get("args") or ())
    # The webhook's own pair is not the Pod's: it sits after the Pod's args and before the
    # defaulted ones (pod_kv_cache_inject.go:injectPod), not necessarily at the end.
    webhook = (set(renderer.webhook_dtype_positions(args, item.engine))
               if ctx.pod.annotations.get(api.ANNOTATION_PREFIX + "injected") else set())
    own = [o for o in item.occurrences if o["source"] == "args" and o["index"] not in webhook]
    positions = [j for j in _own_positions(own, args) if j not in webhook]
    if positions:
        return Fix(f"remove {_entries(positions, 'args')} of container {item.container} from the Pod's "
                   f"template: the webhook appends the Binding's dtype" + _hint(item, ctx))
    return None


def pod_state(pod: records.Pod, container: str | None) -> dict:
    """The Pod's state as the rollout reads it: phase, Terminating, and its engine container's
    readiness, restarts, waiting reason (CrashLoopBackOff, ...) and last exit code (None: not reported)."""
    cs = pod.states.get(container) if container else None
    return {"phase": pod.phase or None, "terminating": bool(pod.deleting),
            "ready": cs["ready"] if cs else None, "restarts": cs["restarts"] if cs else None,
            "waiting": (cs["waiting"] or None) if cs else None,
            "lastExitCode": pod.exit_codes.get(container) if container else None}


def state_label(item: Item) -> str | None:
    """`Running`, `Pending`, `Terminating`, `CrashLoopBackOff (exit 2)`, `Running, not ready`: one cell."""
    state = item.state
    if state is None:
        return None
    if state["terminating"]:
        text = "Terminating"
    elif state["waiting"]:
        text = state["waiting"]
    else:
        text = state["phase"] or "Unknown"
        if text == "Running" and state["ready"] is False:
            text += ", not ready"
    if state["lastExitCode"] is not None and not state["terminating"]:
        text += f" (exit {state['lastExitCode']})"
    return text


def _not_served(snapshot) -> bool:
    return snapshot.setting is not None and snapshot.setting.source == NOT_SERVED


def setting_on(snapshot) -> bool:
    """Whether the operator renders the dtype. Before the upgrade (the cluster does not serve the
    Setting's API group) it renders nothing, whatever the Setting's default will be."""
    if _not_served(snapshot):
        return False
    return setting_mod.owned(snapshot.setting)     # unreadable: on, as the operator reads it


def verify(snapshot: records.Snapshot, account: bool = True, predictor=None, roles=None) -> Report:
    """`account`: also judge the replicas that have no Pod (not when the Pods were filtered by
    name: the rest would look missing). `roles(md, role)`: with Pods filtered by label, the roles
    accounted (those whose every Pod the filter lists: see account_replicas). `predictor`: reuse
    one across judgements."""
    on = setting_on(snapshot)
    predictor = predictor or CachedPredict()
    off = NOT_SERVED_REASON if _not_served(snapshot) else OFF_REASON
    items = [judge_candidate(c, snapshot, on, predictor, off) for c in candidates(snapshot)]
    progress = []
    if account:
        items, progress = account_replicas(snapshot, items, on, roles)
    return Report(on, snapshot.setting.source if snapshot.setting else "default", items, progress, account,
                  in_flight=in_flight(snapshot))


def in_flight(snapshot):
    """The Setting in flight as verify reads it (judge/setting.py in_flight); None before the upgrade."""
    return None if _not_served(snapshot) else setting_mod.in_flight(snapshot.setting)


MAX_NO_POD_ROWS = 100     # NO-POD rows per role; beyond, the last row stands for the rest


def account_replicas(snapshot: records.Snapshot, items: list[Item], on: bool, selected=None):
    """Match every pool-attached ModelDeployment role's desired replicas (spec.roles[].replicas,
    1 when unset as the API defaults it) with its Pods: a replica without a Pod becomes a NO-POD
    row. Returns the items (sorted, the NO-POD rows after their deployment's Pods) and one
    DeploymentProgress per deployment in scope. `selected(md, role)`: only those roles (a
    deployment with none is not in scope)."""
    by_role: dict = {}
    for item in items:
        if item.owner:
            by_role.setdefault((item.namespace, item.deployment, item.role), []).append(item)
    extra, progress = [], []
    unlisted: dict = {}
    deployments = sorted((md for md in snapshot.deployments.values()
                          if md.kv_cache and records.in_namespace(md.namespace, snapshot.namespace)),
                         key=lambda d: (d.namespace, d.name))
    flight = in_flight(snapshot)
    moving = flight is not None and flight.asked != on     # the Setting in flight: what a new Pod gets is not settled
    for md in deployments:
        binding = snapshot.bindings.get((md.namespace, md.binding)) if md.binding else None
        expected = binding.dtype if (binding and on) else None
        unsettled = moving and expected != (binding.dtype if (binding and flight.asked) else None)
        unbound = bool(md.binding) and binding is None
        roles, rows = [], []
        refused = refusal(snapshot, md) or spec_refusal(
            md, on, sum(1 for r in md.roles for i in by_role.get((md.namespace, md.name, r.name), ())))
        chosen = [(n, r) for n, r in enumerate(md.roles) if selected is None or selected(md, r)]
        if selected is not None and not chosen:
            continue
        for index, role in chosen:
            desired = 1 if role.replicas is None else max(0, int(role.replicas))
            pods = by_role.get((md.namespace, md.name, role.name), [])
            live = [i for i in pods if not i.terminating]
            status = md.role_status(role.name)
            missing = max(0, desired - len(live))
            shown = min(missing, MAX_NO_POD_ROWS)   # a role asking for millions is one summary row
            release, release_source = _role_release(md, role)
            for n, slot in enumerate(range(len(live), len(live) + shown)):
                reported = (f"; status.roles reports {status.desired} desired, {status.ready} ready"
                            if status else "")
                last = n == shown - 1 and missing > shown
                which = (f"replicas {slot + 1}-{desired} of {desired}" if last else
                         f"replica {slot + 1} of {desired}")
                extra.append(Item(md.namespace, None, api.ENGINE_CONTAINER,
                                  {"kind": "ModelDeployment", "name": md.name}, role.name,
                                  model.normalise_engine(md.engine), release, md.binding,
                                  None if unsettled else expected, None,
                                  NO_POD, f"{which} (spec.roles[{index}].replicas) {'have' if last else 'has'} no "
                                          f"Pod: {len(live)} exist{'s' if len(live) == 1 else ''}" + reported
                                          + (f"; its Binding {md.binding} {snapshot.absent(md.namespace)}"
                                             if unbound else "")
                                          + (f"; {refused_lead(refused)}: {refused.said}" if refused else "")
                                          + (f"; {setting_mod.in_flight_message(flight)}: what it is rendered with "
                                             f"is not settled" if unsettled else ""),
                                  takeover=bool(role.command), slot=slot, version_source=release_source,
                                  fix=fixes.missing_binding_fix(md.namespace, md.binding, True) if unbound else
                                  refused_fix(md, refused) if refused else
                                  f"wait for the operator to create it; if it does not, kubectl describe "
                                  f"modeldeployment {md.name} -n {md.namespace} says why"))
                rows.append(extra[-1])
            if missing > shown:
                unlisted[md.namespace, md.name] = unlisted.get((md.namespace, md.name), 0) + missing - shown
            rows.extend(pods)
            roles.append(RoleProgress(role.name, desired, len(live), len(pods) - len(live), status))
        counts = {k: 0 for k in PROGRESSES}
        stuck: dict = {}
        extra_missing = unlisted.get((md.namespace, md.name), 0)
        if extra_missing:                   # the replicas a summary row stands for, beyond itself
            counts[NOT_CREATED] += extra_missing
        for row in rows:
            counts[row.progress] += 1
            if row.progress == STUCK:
                stuck[row.status] = stuck.get(row.status, 0) + 1
        progress.append(DeploymentProgress(md.namespace, md.name, md.binding, expected, roles, counts, stuck,
                                           unbound=unbound, setting_on=on,
                                           hold=holds.hold(md, binding, (snapshot.pools or {}).get(
                                               binding.pool) if binding is not None and binding.pool else None,
                                                           holds.waiting(rows), snapshot.absent(md.namespace),
                                                           snapshot.source != "file"),
                                           domain=holds.domain_said(md, binding, snapshot.source != "file"),
                                           unread=unbound and snapshot.source == "file",
                                           up_to_date=holds.up_to_date(md),
                                           refused=refused if counts[NOT_CREATED] else None))
    items = sorted(items + extra, key=row_order)
    return items, progress


class SpecRefusal(Record):
    """A deployment with no Pod at all whose spec the ModelDeployment webhook refuses on create
    (operator/webhooks.model_deployment_refusals: its own --kv-cache-dtype while the Setting is on;
    owned_arg_refusals: an argument the operator owns, whatever the Setting): where the webhook
    runs, such a create is refused at `kubectl apply` and nothing is stored; where the object is
    there all the same (stored while the webhook let it pass, or no webhook ran) its replicas are
    not created as the spec stands. Either way the wait would end failing, so it ends at once.
    Read like a load/events Refusal. `owned`: the keys of the owned arguments named (none: the
    dtype rule)."""

    __slots__ = ("paths", "webhook", "removal", "owned")
    reason, count, last, component, spec = "WebhookRefusesSpec", 1, "", "", True

    def __init__(self, paths: tuple[str, ...], webhook: str, removal: tuple[str, ...] = (),
                 owned: tuple[str, ...] = ()):
        self.paths = paths          # the entries the webhook names (one error per flag entry)
        self.webhook = webhook
        self.removal = removal or paths     # what to remove: each flag and its separate value
        self.owned = owned

    @property
    def denied(self) -> str:
        if self.owned:
            return (f"{', '.join(self.paths)}: {', '.join(self.owned)} "
                    f"{'is' if len(self.owned) == 1 else 'are'} set by the operator for this engine, whatever the "
                    f"Setting")
        return (f"{', '.join(self.paths)}: {webhooks.DTYPE_ARG} is set by the operator while spec.kvCache names a "
                f"pool and the Setting is on")

    @property
    def message(self) -> str:
        return f"admission webhook {self.webhook!r} refuses this spec on create and update: {self.denied}"

    @property
    def said(self) -> str:
        return self.message

    def to_dict(self):
        return {"reason": self.reason, "message": self.message, "count": None, "last": None, "component": None,
                "webhook": self.webhook, "denied": self.denied, "paths": list(self.paths)}


def spec_refusal(md, on: bool, pods: int) -> SpecRefusal | None:
    """SpecRefusal for md when none of its roles has a Pod and its spec is one the webhook refuses
    (the owned arguments first: they are refused whatever the Setting)."""
    if pods:
        return None
    engine = model.normalise_engine(md.engine)
    owned = webhooks.owned_arg_refusals(engine, md.roles)
    if owned:
        return SpecRefusal(tuple(r.path for r in owned), webhooks.MODEL_DEPLOYMENT_WEBHOOK,
                           tuple(p for r in owned for p in (r.path, r.value_path) if p),
                           tuple(dict.fromkeys(r.key for r in owned)))
    paths = webhooks.model_deployment_refusals(engine, md.roles, md.kv_cache, on, bool(md.deleting))
    if not paths:
        return None
    removal = []
    for path in paths:      # `spec.roles[i].extraArgs[j]`: a flag without `=` takes the next entry as its value
        i, j = (int(n) for n in path.replace("]", "[").split("[")[1::2])
        args = md.roles[i].extra_args
        removal.append(path)
        if "=" not in args[j] and j + 1 < len(args) and not args[j + 1].startswith("-"):
            removal.append(f"spec.roles[{i}].extraArgs[{j + 1}]")
    return SpecRefusal(tuple(paths), webhooks.MODEL_DEPLOYMENT_WEBHOOK, tuple(removal))


def refusal(snapshot, md):
    """The operator's latest word that it cannot create md's replicas (a FailedCreate or RenderFailed
    event: load/events.py), when it is about md's spec as it is now: said at or after the last
    write of md's spec the API server recorded (metadata.managedFields), so an event from before
    the user fixed the spec is not taken for the fixed one's. None: none said, or not read."""
    found = (getattr(snapshot, "refusals", None) or {}).get((md.namespace, "ModelDeployment", md.name))
    if found is None or not md.spec_written or not found.last:
        return found
    return found if _second(found.last) >= _second(md.spec_written) else None


def injection_refusals(pods, refusals) -> tuple:
    """The controllers of `pods` opted into injection whose new Pods the injection webhook refuses
    (their FailedCreate quotes it: load/events.py), as ((namespace, kind, name), Refusal) in name
    order: what fails verify (judge/verdict.refused) and ends --wait (judge/rollout.Progress)."""
    owners = {(p.namespace, p.owner[1], p.owner[2]) for p in pods if p.opted_in and p.owner is not None}
    found = [(key, (refusals or {}).get(key)) for key in sorted(owners)]
    return tuple((key, r) for key, r in found if r is not None and r.webhook == webhooks.INJECTION_WEBHOOK)


def refused_lead(refused, many: bool = False) -> str:
    """How a refusal is introduced: the webhook refuses the spec, or the operator says it cannot."""
    if getattr(refused, "spec", False):
        return "its spec is refused"
    return f"the operator cannot create {'them' if many else 'it'}"


def _second(stamp: str) -> str:
    """RFC 3339 (UTC, `Z`) to the second, so that times of either precision compare as strings."""
    return stamp[:19]


def refused_fix(md, refused) -> str:
    """What to do about replicas the operator cannot create: what its event names, and where to read it."""
    if isinstance(refused, SpecRefusal):
        why = (f"the operator sets {', '.join(refused.owned)} for this engine itself" if refused.owned else
               "the operator renders the Binding's dtype itself while the Setting is on")
        return (f"remove {' and '.join(refused.removal)} from ModelDeployment {md.name} ({why}); "
                f"kubectl kvcache check -n {md.namespace} -o describe")
    events = (f"kubectl get events -n {md.namespace} --field-selector "
              f"involvedObject.name={md.name},reason={refused.reason}")
    if refused.webhook:
        return (f"the API server refuses its Pods (admission webhook {refused.webhook}): change what the webhook "
                f"names, then the operator creates them; {events}")
    return f"the operator cannot create it ({refused.reason}): fix what its event names, then it is created; {events}"


extra_args_start = _extra_args_start      # rollout.settled asks the same of a Pod


def row_order(item):
    """Where a row sits in the table: by namespace and Pod, a deployment's NO-POD rows after its Pods."""
    if item.pod is not None:
        return (item.namespace, item.pod)
    return (item.namespace, f"{item.deployment}-{item.role}-\uffff{item.slot:09d}")
