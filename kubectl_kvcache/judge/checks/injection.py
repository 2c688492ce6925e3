"""4. Injection opt-ins (Pods and workload Pod templates) the webhook will refuse: what it cannot
append to (injection-refused) and what its resolution refuses whatever the Setting
(injection-unresolved: operator/webhooks.py injection_refusals, from pod_kv_cache_resolve.go)."""

from __future__ import annotations

from kubectl_kvcache import engine as model
from kubectl_kvcache.operator import api, renderer, webhooks
from kubectl_kvcache.judge.checks.engines import flag_tokens, injected_engine
from kubectl_kvcache.judge.checks.findings import Finding, finding
from kubectl_kvcache.judge.checks.inputs import OptIn, target_container, unique
from kubectl_kvcache.engine import Token


def _without_webhook_tail(container, optin):
    """An admitted Pod's args hold the webhook's own `--kv-cache-dtype <dtype>`, followed only by
    the defaulted arguments (SGLang's --enable-hierarchical-cache, ...): that pair is not the Pod's
    (pod_kv_cache_inject.go:injectPod appends the rendered arguments, then the defaulted ones)."""
    args = list(container.get("args") or ())
    if optin.existing_pod and optin.annotation("injected"):
        at = renderer.webhook_dtype_positions(args, model.normalise_engine(optin.annotation("engine")))
        if at:
            return dict(container, args=args[:at[0]] + args[at[1] + 1:])
    return container


def injection_problems(optin: OptIn) -> list[tuple[str, str]]:
    """(why, fix) for every reason the webhook refuses this opt-in."""
    container, problem = target_container(optin)
    if container is None:
        return [(problem, f"add annotation {api.ANNOTATION_PREFIX}container naming the engine container")]
    container = _without_webhook_tail(container, optin)
    command, args = list(container.get("command") or ()), list(container.get("args") or ())
    name = container.get("name")
    if not command and not args:
        return [(f"container {name} has no command and no args", "write the engine's command and args into "
                                                                   "the container spec")]
    problems = []
    forwarded = optin.annotation("launch-args-forwarded")
    why, fix = model.program_refusal(command + args, api.INJECT_LABEL, forwarded == "true")
    if why:
        problems.append((f"container {name}: {why}", fix))
    engine = model.normalise_engine(optin.annotation("engine"))
    if engine == "vllm" and (optin.annotation("manufacturer") or "").lower() == "ascend":
        engine = "vllm-ascend"
    # pod_kv_cache_inject.go: checkLaunchArgs (args without a command, an unidentified program,
    # another engine than the annotations select), unless the Pod declares launch-args-forwarded
    why, fix = model.launch_refusal(command, args, engine, forwarded, api.ANNOTATION_PREFIX + "launch-args-forwarded")
    if why:
        problems.append((f"container {name}: {why}", fix))
    at = injected_engine(optin.annotations, container)
    if at is not None:
        tokens = ([Token(t, "command", k) for k, t in enumerate(command)]
                  + [Token(t, "args", k) for k, t in enumerate(args)])
        for f in flag_tokens(tokens, at.profile):
            if f.ambiguous:
                problems.append((f"container {name}: {f.where} `{f.text}` is an ambiguous abbreviation on "
                                 f"{at.long_label}: {f.ambiguous}", f"remove {f.removal()} `{f.shown}`"))
            else:
                problems.append((f"container {name} passes the flag itself on {at.long_label}: "
                                 f"{f.where} `{f.shown}`",
                                 f"remove {f.removal()} `{f.shown}`: the webhook appends the Binding's dtype"))
    return problems


def accepted_engines(optins: list[OptIn]) -> tuple[str, ...]:
    """The engine annotation values the cluster's operator takes: ParseEngine's exact spellings in
    the releases read (inject/types.go), and every value a Pod here was injected with (the running
    release admitted it: the cluster tells)."""
    told = [o.annotation("engine") for o in optins if o.existing_pod and o.annotation("injected")]
    return tuple(dict.fromkeys((*webhooks.SELECTABLE_ENGINES, *(t for t in told if t))))


def resolution_findings(optins: list[OptIn], snapshot) -> list[Finding]:
    """injection-unresolved: what the webhook's resolution refuses (engine spelling, manufacturer,
    a domain annotation, a Binding being deleted, the pool's ledger or client endpoint)."""
    found = []
    engines = accepted_engines(optins)
    assumed = engines == webhooks.SELECTABLE_ENGINES
    pools = snapshot.pools
    for o in optins:
        name = o.annotation("binding")
        binding = snapshot.bindings.get((o.namespace, name)) if name else None
        pool = pools.get(binding.pool) if (pools is not None and binding is not None and binding.pool) else None
        pool_known = pool is not None or (pools is not None and snapshot.source != "file")
        refusals = webhooks.injection_refusals(o.annotations, binding, True, pool, pool_known,
                                               admitted=o.existing_pod and bool(o.annotation("injected")),
                                               accepted_engines=engines)
        if (o.existing_pod and o.annotation("injected")) or not o.annotation("engine"):
            # an admitted Pod's spelling was taken; a missing annotation is said below (unchecked)
            refusals = [r for r in refusals if "ParseEngine" not in r.rule]
        if (not refusals and model.normalise_engine(o.annotation("engine")) == "vllm"
                and o.annotation("manufacturer") == webhooks.ASCEND
                and binding is not None):
            # inject/engine.go MatchTransport: vLLM-Ascend's store backend takes only the ascend
            # transport (CANN); the plugin does not read the KVCacheBackends, so it says so
            found.append(finding("unchecked", o.obj, f"vLLM-Ascend accepts only the 'ascend' transport (API 'CANN'): "
                                                     f"whether pool {binding.pool}'s KVCacheBackend offers it is not "
                                                     f"read (inject/engine.go: MatchTransport)",
                                 f"check spec.transport.protocol of pool {binding.pool}'s KVCacheBackend: "
                                 f"kubectl get kvcachepools {binding.pool} -o jsonpath='{{.spec.backends}}'"))
        if not refusals:
            continue
        reasons = "; ".join(f"{r.why} ({r.rule})" for r in refusals)
        if any("ParseEngine" in r.rule for r in refusals) and assumed:
            reasons += ("; the spellings ParseEngine takes are those of the operator releases read (no Pod here was "
                        "injected with another): assumed")
        what = ("a Pod like this one (it keeps running; its replacement is refused)" if o.existing_pod
                else f"the Pods of this {o.kind} (it reports FailedCreate)")
        found.append(finding("injection-unresolved", o.obj, f"the injection webhook refuses {what}, whatever the "
                                                            f"Setting: {reasons}",
                             "; ".join(unique(r.fix for r in refusals))))
    return found


def check_injection(optins: list[OptIn], snapshot=None) -> list[Finding]:
    found = resolution_findings(optins, snapshot) if snapshot is not None else []
    for o in optins:
        if not o.annotation("binding") or injected_engine(o.annotations, None) is None:
            missing = [k for k in ("binding", "engine") if not o.annotation(k)
                       or (k == "engine" and model.normalise_engine(o.annotation(k)) is None)]
            found.append(finding("unchecked", o.obj, f"opts into injection but annotation "
                                                     f"{', '.join(api.ANNOTATION_PREFIX + k for k in missing)} is "
                                                     f"missing or not vLLM/SGLang: the webhook needs it",
                                 f"set {', '.join(api.ANNOTATION_PREFIX + k for k in missing)}"))
        problems = injection_problems(o)
        if not problems:
            continue
        reasons = "; ".join(w for w, _ in problems)
        if o.existing_pod:
            owner = f" its owner {o.owner[0]} {o.owner[1]} reports FailedCreate for the replacement" if o.owner else ""
            message = (f"the webhook refuses a Pod like this one: {reasons}. This Pod already exists and keeps "
                       f"running;{owner or ' a new Pod like it is refused'}")
        else:
            message = (f"the webhook refuses the Pods of this template: {reasons}. The {o.kind}'s next Pods are not "
                       f"created (it reports FailedCreate)")
        found.append(finding("injection-refused", o.obj, message, "; ".join(unique(f for _, f in problems))))
    return found
