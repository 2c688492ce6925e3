"""2. Roles that pass --kv-cache-dtype themselves in extraArgs (refused at their next edit while the
Setting is on), roles that pass an argument the operator owns whatever the Setting (SGLang's
disaggregation keys: every edit refused), and 3. take-over roles (`command` set) on a pool: the
operator renders nothing for them."""

from __future__ import annotations

from kubectl_kvcache import engine as model
from kubectl_kvcache.judge import fixes, verify
from kubectl_kvcache.operator import api, renderer, webhooks
from kubectl_kvcache.judge.checks.engines import (EXTRA_ARGS, EngineAt, deployment_engines, flag_tokens,
                                                  operator_tokens, outcomes, plain, role_engine,
                                                  role_images)
from kubectl_kvcache.judge.checks.findings import ERROR, INFO, WARNING, Finding, finding
from kubectl_kvcache.engine import DISPLAY_NAMES, CachedPredict, Token, predict
from kubectl_kvcache.record import Record
from kubectl_kvcache.judge.nearest_dtype import nearest_spelling


class RoleEntry(Record):
    __slots__ = ("namespace", "deployment", "role", "role_index", "type", "engine", "binding", "dtype", "flags",
                 "today", "after", "verdict", "severity", "reason")
    __hash__ = None     # mutable: not hashable

    def __init__(self, namespace: str, deployment: str, role: str, role_index: int, type: str,
                 engine: EngineAt | None, binding: str | None, dtype: str | None, flags: list[dict], today: str,
                 after: str, verdict: str, severity: str, reason: str):
        self.namespace = namespace
        self.deployment = deployment
        self.role = role
        self.role_index = role_index
        self.type = type            # own-flag | take-over
        self.engine = engine
        self.binding = binding
        self.dtype = dtype
        self.flags = flags          # {path, text, value, where}
        self.today = today
        self.after = after
        self.verdict = verdict
        self.severity = severity
        self.reason = reason

    def to_dict(self):
        return {
            "namespace": self.namespace, "deployment": self.deployment, "role": self.role,
            "roleIndex": self.role_index, "type": self.type,
            "engine": self.engine.engine if self.engine else None,
            "engineVersion": str(self.engine.version) if self.engine and not self.engine.span else None,
            "versionSource": self.engine.source if self.engine else None,
            "binding": self.binding, "dtype": self.dtype, "flags": self.flags,
            "today": self.today, "afterUpgrade": self.after,
            "verdict": self.verdict, "severity": self.severity, "reason": self.reason,
        }


def _role_path(i, j):
    return f"spec.roles[{i}].{EXTRA_ARGS}[{j}]"


def _shown(parse: model.Parse) -> str:
    if parse.outcome == model.REJECTED:
        return "REJECTED"
    if parse.outcome == model.UNKNOWN:
        return "UNKNOWN"
    return parse.effective if parse.effective is not None else "auto (engine default)"


def _today_counts(cands, snapshot, on) -> dict[str, int]:
    """What the role's running Pods run with, as verify judges them: value -> Pods (replicas that
    share a container spec are parsed once)."""
    counts: dict[str, int] = {}
    predictor = CachedPredict()
    for cand in cands:
        item = verify.judge_candidate(cand, snapshot, on, predictor)
        undecided = item.status == verify.UNKNOWN and not verify.in_flight_only(item)
        shown = item.status if item.status == verify.REJECTED or undecided else (item.effective or "auto")
        counts[shown] = counts.get(shown, 0) + 1
    return counts


def _today_text(counts) -> str | None:
    """`fp8_e5m2 (2 pods)`; None without Pods."""
    return ", ".join(f"{v} ({n} pod{'s' if n > 1 else ''})" for v, n in counts.items()) or None


_OPERATOR_FIRST = "the operator's --kv-cache-dtype, which comes before the role's"


def _no_store(cands, engine) -> str:
    """Why the role's Pods carry no store (every one of them a render without one), else ''."""
    views = [renderer.store_view(c.pod.container(api.ENGINE_CONTAINER) or {}, engine) for c in cands]
    if views and all(v.rendered is False for v in views):
        return views[0].reason
    return ""


def edit_refusal(md, on: bool) -> str:
    """What the webhook does to the deployment's next edit for a role's own --kv-cache-dtype, today
    and after `setting on` (model_deployment_kv_cache_dtype_test.go: refused on create and update
    only while the Setting is on, never for a deployment being deleted)."""
    if md.deleting:
        return ("It is being deleted: the webhook does not judge this flag on it, today or after `setting on`")
    if on:
        return "The webhook refuses the deployment's next edit (the Setting is on) until it is removed"
    return ("Today (the Setting off) the webhook admits the deployment's edits; after `setting on` its next edit "
            "is refused until the flag is removed")


def own_flag_entry(md, i, role, at: EngineAt, binding, snapshot, pods, on) -> tuple[RoleEntry, Finding] | None:
    tokens = [Token(a, EXTRA_ARGS, j) for j, a in enumerate(role.extra_args)]
    flags = flag_tokens(tokens, at.profile)
    if not flags:
        return None
    dtype = binding.dtype if binding else None
    own = outcomes(tokens, at)
    no_store = _no_store(pods.of(md, role.name), at.engine)
    # The rendered order is base command, connector arguments (the dtype among them), then the
    # role's extraArgs (controllers/worker/model_deployment_kv_cache_dtype_test.go, "a stored role's
    # own value stays after the rendered one"); without a store the operator renders no dtype.
    after = outcomes(operator_tokens(dtype) + tokens, at) if dtype and not no_store else own
    own_value = next((f.value for f in reversed(flags) if not f.ambiguous), None)
    predicted_today = after if on else own
    counts = _today_counts(pods.of(md, role.name), snapshot, on)
    today = _today_text(counts) or f"{_shown(predicted_today)} (no Pods: predicted)"
    paths = ", ".join(f.removal(lambda _source, j: _role_path(i, j)) for f in flags)
    spelled = ", ".join(f"`{f.shown}` at {f.removal(lambda _source, j: _role_path(i, j))}" for f in flags)
    cause = None

    if after.outcome == model.REJECTED:
        verdict, severity = "REJECTED", ERROR
        ambiguous = next((f for f in flags if f.ambiguous), None)
        why = (f"The engine exits on it: {ambiguous.ambiguous}" if ambiguous
               else f"After the upgrade the engine exits: {plain(after.reason, _OPERATOR_FIRST)}")
    elif after.outcome == model.UNKNOWN:
        verdict, severity, why = "UNKNOWN", WARNING, plain(after.reason, _OPERATOR_FIRST)
        cause = after.cause
    elif dtype is None:
        verdict, severity = "UNKNOWN", WARNING
        why = f"Binding {md.binding} {snapshot.absent(md.namespace)}, so its dtype is unknown"
        cause = model.Cause("spec", f"Binding {md.binding}")
    elif no_store:
        verdict, severity = "NO-STORE", WARNING
        why = (f"Its Pods have no store ({no_store}): the operator renders no --kv-cache-dtype beside them, so "
               f"the role's own value is what runs")
    elif after.effective == dtype:
        verdict, severity = "SAME", WARNING
        why = ("It sets the Binding's own value, so it changes nothing the role runs"
               + ("" if md.deleting else ": only the deployment's next edit is refused" if on else
                  ": after `setting on` only the deployment's next edit is refused"))
    else:
        verdict, severity = "MISMATCH", ERROR
        # "keeps" only where every Pod runs that value today (issue 39 item 7: "keeps running fp8"
        # beside "Today: bfloat16")
        keeps = set(counts) == {after.effective} if counts else predicted_today.effective == after.effective
        why = (f"It comes after the operator's --kv-cache-dtype {dtype} and wins: "
               + (f"the role keeps running {after.effective}" if keeps else
                  f"after the upgrade the role runs {after.effective}")
               + f", not the Binding's {dtype!r}")
    after_text = _shown(after)
    message = (f"role {role.name} passes the flag itself on {at.long_label}: {spelled}. {why}. Today: {today}; "
               f"after the upgrade: {after_text}. {edit_refusal(md, on)}")
    keep = own_value if own_value and own_value != dtype and after.outcome != model.REJECTED else None
    fix = fixes.remove_own_flag(paths, f"ModelDeployment {md.name}") + (
        f" once the Binding's dtype is the one it should run (to keep {keep}, move the deployment to a Binding "
        f"with dtype {keep!r} and a new domain.name)" if keep else "")
    near = nearest_spelling(own_value, at.starting) if own_value not in at.profile.accepted else None
    if near:
        fix += f" (its value {own_value!r} is not a spelling {at.name} accepts; the nearest is {near!r})"
    entry = RoleEntry(md.namespace, md.name, role.name, i, "own-flag", at, md.binding, dtype,
                      [{"path": _role_path(i, f.index), "text": f.text, "value": f.value,
                        **({"valuePath": _role_path(i, f.value_at[1])} if f.value_at else {}),
                        **({"ambiguous": f.ambiguous} if f.ambiguous else {})} for f in flags],
                      today, after_text, verdict, severity, why)
    return entry, finding("role-own-flag", (md.namespace, "ModelDeployment", md.name), message, fix, severity,
                          cause, _replicas(role) if cause is not None else 0)


def _replicas(role) -> int:
    return role.replicas if role.replicas is not None else 1


def takeover_entry(md, i, role, at: EngineAt, binding, snapshot, pods, on) -> tuple[RoleEntry, Finding]:
    dtype = binding.dtype if binding else None
    cands = pods.of(md, role.name)
    image = role.image or ((cands[0].pod.container(api.ENGINE_CONTAINER) or {}).get("image") if cands else None)
    container = {"name": api.ENGINE_CONTAINER, "command": list(role.command), "env": list(role.env),
                 "image": image or ""}
    pred = predict(container, at.engine, None if at.span else str(at.version))
    flags: list[dict] = [{"path": f"spec.roles[{i}].{o.source}[{o.index}]", "text": o.text, "value": o.value}
             for o in pred.occurrences]
    where = "; ".join(f"`{f['text']}{'' if '=' in f['text'] else ' ' + str(f['value'])}` in "
                      f"{f['path']}" for f in flags)
    if not where and pred.outcome == model.OK:
        where = "no --kv-cache-dtype"
    detail = ", ".join(x for x in (where, f"via {pred.via}" if pred.via else "") if x)
    cause = None
    if pred.outcome == model.REJECTED:
        verdict, severity, why = "REJECTED", ERROR, f"the engine exits: {pred.reason}"
        after = "REJECTED"
    elif pred.outcome == model.UNKNOWN:
        verdict, severity, why = "UNKNOWN", WARNING, f"what it runs with cannot be known: {pred.reason}"
        after = "UNKNOWN"
        cause = pred.cause
    else:
        after = pred.effective or "auto (engine default)"
        if dtype is None:
            verdict, severity = "UNKNOWN", WARNING
            why = f"runs {after}; Binding {md.binding} {snapshot.absent(md.namespace)}"
            cause = model.Cause("spec", f"Binding {md.binding}")
        elif pred.effective is None:
            verdict, severity = "MISSING", WARNING
            why = f"its command passes no --kv-cache-dtype: the engine runs its default, not the Binding's {dtype!r}"
        elif pred.effective == dtype:
            verdict, severity, why = "OK", INFO, f"its own command sets the Binding's {dtype!r}"
        else:
            verdict, severity = "MISMATCH", WARNING
            why = f"its own command sets {pred.effective!r}, not the Binding's {dtype!r}"
    today = _today_text(_today_counts(cands, snapshot, on)) or f"{after} (no Pods: predicted)"
    message = (f"take-over role {role.name} (command set) on {at.long_label}: the operator renders nothing for "
               f"it, before or after the upgrade; {why}" + (f" ({detail})" if detail else ""))
    fix = {"OK": "", "MISMATCH": f"set `--kv-cache-dtype {dtype}` in the role's command if it should run the "
                                 f"Binding's value",
           "MISSING": f"add `--kv-cache-dtype {dtype}` to the role's command if it should run the Binding's value",
           "REJECTED": "fix the role's command: the engine cannot start",
           "UNKNOWN": "check the role's command by hand"}[verdict]
    entry = RoleEntry(md.namespace, md.name, role.name, i, "take-over", at, md.binding, dtype, flags,
                      today, after, verdict, severity, why)
    return entry, finding("takeover-role", (md.namespace, "ModelDeployment", md.name), message, fix, severity,
                          cause, _replicas(role) if cause is not None else 0)


def owned_arg_findings(md) -> list[Finding]:
    """One `role-owned-arg` finding per role whose extraArgs name an argument the operator owns on
    the deployment's engine (operator/webhooks.owned_arg_refusals): refused on every create and
    update, whatever the Setting, with or without a pool, while it is being deleted too."""
    engine = model.normalise_engine(md.engine)
    refused = webhooks.owned_arg_refusals(engine, md.roles)
    found: list[Finding] = []
    for i, role in enumerate(md.roles):
        mine = [r for r in refused if r.path.startswith(f"spec.roles[{i}].")]
        if not mine:
            continue
        spelled = ", ".join(f"`{r.entry}` at {r.path}" + (f" ({r.key})" if r.entry.split("=", 1)[0] != r.key else "")
                            for r in mine)
        paths = ", ".join(p for r in mine for p in (r.path, r.value_path) if p)
        deleting = " (while it is being deleted too: the webhook keeps judging its updates)" if md.deleting else ""
        message = (f"role {role.name} passes arguments the operator owns on {DISPLAY_NAMES[engine or '']}: {spelled}. "
                   f"The webhook refuses every create and update of the deployment while they are there{deleting}, "
                   f"whatever the Setting (today, and after `setting on`)")
        fix = (f"remove {paths} from ModelDeployment {md.name} (the operator sets "
               f"{', '.join(dict.fromkeys(r.key for r in mine))} for engine {engine!r})")
        found.append(finding("role-owned-arg", (md.namespace, "ModelDeployment", md.name), message, fix, ERROR))
    return found


def check_roles(snapshot, deployments, pods, on) -> tuple[list[RoleEntry], list[Finding]]:
    entries, found = [], []
    for md in deployments:
        found += owned_arg_findings(md)
        if not md.kv_cache:
            continue
        ats = deployment_engines(md, pods)
        obj = (md.namespace, "ModelDeployment", md.name)
        if not ats:
            found.append(finding("unchecked", obj, f"spec.engine.name {md.engine!r} is not vLLM or SGLang: its "
                                                   f"Binding's dtype and its roles are not checked for it"))
            continue
        binding = snapshot.bindings.get((md.namespace, md.binding)) if md.binding else None
        for i, role in enumerate(md.roles):
            result: tuple[RoleEntry, Finding] | None
            # each role at the release its own image runs (role_engine: a stated image always wins)
            at = role_engine(md, i, role, role_images(pods, md, role)) or ats[-1]
            if role.command:
                result = takeover_entry(md, i, role, at, binding, snapshot, pods, on)
            else:
                result = own_flag_entry(md, i, role, at, binding, snapshot, pods, on)
            if result:
                entries.append(result[0])
                found.append(result[1])
    return entries, found
