"""The capacity reads of the commands that change a dtype (recover, setting off, check --observe):
the KV-cache capacity of the replicas the change touches, and nothing else, read the way
`verify --observe` reads it (judge/observed.targets and apply, load/engine_words.read: one budget,
its deadline and byte limits; a 403 is one note and the prediction says "not read").

Why by default in recover and setting off: their plan is what a careful user reads before the
change, and a change that stops vLLM from starting must be said there without an extra flag.
The read is bounded to the running replicas the change touches. `check` reads only with --observe
(it judges every object in scope, and its findings stand without the engines' word); of its fixes,
removing a role's own --kv-cache-dtype changes the dtype its replicas run (to the Binding's), while
a rejected Binding's fix moves its users to another spelling of the same cache format
(judge/checks/engines.suggest_dtype, SAME_FORMAT), the same bytes per element in every release read
(tests/engine/test_kvbytes.py holds every such pair to it): no capacity moves there.
"""

from __future__ import annotations

from kubectl_kvcache.judge import capacity


def replicas(snapshot, touched) -> list:
    """The running engine replicas of `snapshot` that `touched(item)` selects, judged as verify
    judges them (the dtype each runs with now: Item.effective)."""
    from kubectl_kvcache.judge import observed, verify

    report = verify.verify(snapshot, account=False)
    return [i for i in report.items if i.pod is not None and i.engine and observed.running(i) and touched(i)]


def read(client, items, err) -> None:
    """Each item's log head (vLLM: then its /metrics) read once, bounded, its capacity set by
    judge/observed.apply (Item.capacity; None where nothing was read). `client` None (saved
    objects): nothing is read."""
    if client is None or not items:
        return
    from kubectl_kvcache.cli.flows.verify import keeps
    from kubectl_kvcache.judge import observed
    from kubectl_kvcache.load import engine_words
    from kubectl_kvcache.render import verify as view

    wanted = observed.targets(items, True, crashes=set())
    if not wanted:
        return
    budget = engine_words.Budget()
    got = engine_words.read(client, wanted, budget=budget, keeps=keeps)
    observed.apply(items, got)
    rest = observed.targets(observed.unread(items, got), True, metrics=True, crashes=set())
    if rest:
        more = engine_words.read(client, rest, budget=budget, keeps=keeps)
        observed.apply(items, more)
        got.merge(more)
    view.observation_notes(got, err)


def predicted(snapshot, client, touched, new_dtype_of, err) -> list[tuple]:
    """(item, judge.capacity.Change) for one running replica of each deployment role (a Pod opted
    in: itself) that `touched` selects and whose dtype changes to `new_dtype_of(item)`, its
    capacity read first. One a role: its replicas run one argv on one release, and the reads stay
    bounded by the roles a change touches, not by their replicas."""
    items = replicas(snapshot, touched)
    pairs = capacity.changes(items, new_dtype_of)
    seen: set = set()
    chosen = []
    for item, _ in pairs:
        key = (item.namespace, item.deployment, item.role) if item.deployment else (item.namespace, item.pod)
        if key not in seen:
            seen.add(key)
            chosen.append(item)
    read(client, chosen, err)
    return capacity.changes(chosen, new_dtype_of)


def hint(client) -> str:
    """How the capacity is read where it was not."""
    if client is None:
        return "capacity not read (saved objects hold no engine logs; against the cluster the plan reads it, " \
               "and kubectl kvcache verify --observe shows it)"
    return "capacity not read (kubectl kvcache verify --observe reads it and says why not)"


def role_of(snapshot, item):
    md = snapshot.deployments.get((item.namespace, item.deployment or "")) if item.deployment else None
    return md.role(item.role) if md is not None and item.role else None


def recover_changes(found, client, dtype, err) -> list[tuple]:
    """recover: the replicas of the Binding's users (their deployments are moved; a Pod opted in
    by label is moved by hand), each to the target `dtype` where the operator's render decides it."""
    snapshot = found.snapshot
    return predicted(snapshot, client,
                     lambda i: i.namespace == found.namespace and i.binding == found.binding_name and bool(i.owner),
                     lambda i: capacity.moved_to(i, role_of(snapshot, i), dtype), err)


def setting_off_changes(snapshot, client, err) -> list[tuple]:
    """setting off: every pool-attached deployment's replicas roll without the operator's flag."""
    return predicted(snapshot, client, lambda i: bool(i.owner) and bool(i.binding),
                     lambda i: capacity.after_setting_off(i, role_of(snapshot, i)), err)



def check_fixes(report, snapshot, client, err):
    """check --observe: a role-own-flag fix (remove the role's own flag) moves the role's replicas
    from their own value to the Binding's dtype; each such fix says what that does to their KV caches."""
    wanted = {(e.namespace, e.deployment, e.role): e.dtype for e in report.roles
              if e.type == "own-flag" and e.dtype and e.verdict == "MISMATCH"}
    if not wanted:
        return report
    pairs = predicted(snapshot, client, lambda i: (i.namespace, i.deployment, i.role) in wanted,
                      lambda i: wanted[(i.namespace, i.deployment, i.role)], err)
    return capacity.with_fixes(report, pairs, hint(client))
