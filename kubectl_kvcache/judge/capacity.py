"""What a KV-cache dtype change does to a replica: its capacity after the change, and whether the
model's max length still fits. Pure: an Item (with the capacity its engine reported, if read) and
the new dtype in, a Change out.

The prediction: the memory an engine gives its KV cache does not depend on the cache's dtype, so
the new capacity is the observed one times bytes(old) / bytes(new) (engine/kvbytes, read from each
release's code). The rule it is compared with, from the engines' code:
- vLLM refuses to start when one request of the max length no longer fits: V1 "To serve at least
  one request with the model(s)'s max seq len (X), (Y GiB KV cache is needed, which is larger than
  the available KV cache memory (Z GiB)" (vllm/v1/core/kv_cache_utils.py
  check_enough_kv_cache_memory from 0.7.0; vllm/v1/core/kv_cache_planning.py from 0.33.0); V0
  "The model's max seq len (X) is larger than the maximum number of tokens that can be stored in
  KV cache (Y)" (vllm/worker/worker.py raise_if_cache_size_invalid, 0.4.1-0.10.x; earlier
  vllm/engine/llm_engine.py, vllm/executor/utils.py). For sliding-window and hybrid models V1
  needs only the window (or the state) for those layers: where it logged its concurrency for the
  max length compared ("Maximum concurrency for N tokens per request: X x", computed from the
  same per-layer needs), that figure times the ratio decides; otherwise the token figure does
  (from the release that derives it from the concurrency, the two agree).
- SGLang starts and refuses a longer input later ("Input length (N tokens) exceeds the maximum
  allowed length"): a warning, not a crash.
Nothing observed: the capacity was not read, and nothing is predicted.
"""

from __future__ import annotations

from fractions import Fraction

from kubectl_kvcache import engine as model
from kubectl_kvcache.record import Record

REFUSES_START = "refuses-to-start"      # vLLM: the engine exits at start-up
REFUSES_LONG = "refuses-long-inputs"    # SGLang: starts, refuses inputs longer than the capacity
FITS, NOT_READ, UNKNOWN = "fits", "not-read", "unknown"
STAYS = "stays"     # the same bytes an element: nothing moves (whether it fits now was not read)
MAX_LEN_OPTION = model.MAX_LEN_OPTION
READ_HINT = "capacity not read (--observe reads it)"


class Change(Record):
    """One replica's KV-cache dtype change, predicted. `fits` None: not decided (`reason` says why)."""

    __slots__ = ("engine", "version", "old", "new", "tokens", "predicted", "ratio", "max_len", "max_len_source",
                 "fits", "consequence", "reason", "advice")

    def __init__(self, engine: str | None, version: str | None, old: str | None, new: str, tokens: int | None,
                 predicted: int | None, ratio: Fraction | None, max_len: int | None, max_len_source: str,
                 fits: bool | None, consequence: str, reason: str = "", advice: tuple = ()):
        self.engine = engine
        self.version = version
        self.old = old                      # the dtype it runs with now (the effective value)
        self.new = new
        self.tokens = tokens                # the capacity its engine reported (None: not read)
        self.predicted = predicted          # the capacity after the change (None: not predicted)
        self.ratio = ratio                  # predicted / tokens
        self.max_len = max_len              # the longest request it must hold
        self.max_len_source = max_len_source  # "--max-model-len", "--context-length", "logged", ""
        self.fits = fits
        self.consequence = consequence      # FITS | STAYS | REFUSES_START | REFUSES_LONG | NOT_READ | UNKNOWN
        self.reason = reason
        self.advice = advice                # what fits instead, in words

    @property
    def warns(self) -> bool:
        return self.fits is False

    def summary(self) -> str:
        """One sentence: what the change does, in numbers where known."""
        if self.consequence == NOT_READ:
            return f"{self.old} -> {self.new}: {READ_HINT}"
        if self.ratio == 1:
            return f"{self.old} -> {self.new}: {self.reason}"
        if self.predicted is None:
            return f"{self.old} -> {self.new}: capacity {self.tokens:,} tokens; the new one is UNKNOWN ({self.reason})"
        head = f"{self.old} -> {self.new}: capacity {self.tokens:,} -> about {self.predicted:,} tokens"
        if self.max_len is None:
            return f"{head}; max length not known ({self.reason})"
        where = f"max length {self.max_len:,} ({self.max_len_source})"
        if self.fits:
            return f"{head}; {where} fits"
        if self.consequence == REFUSES_START:
            return f"{head}; {where} does not fit: vLLM refuses to start"
        return f"{head}; {where} does not fit: SGLang refuses inputs longer than the capacity"

    def to_dict(self):
        return {"engine": self.engine, "engineVersion": self.version, "from": self.old, "to": self.new,
                "tokens": self.tokens, "predictedTokens": self.predicted,
                "ratio": None if self.ratio is None else str(self.ratio), "maxLength": self.max_len,
                "maxLengthSource": self.max_len_source or None, "fits": self.fits,
                "consequence": self.consequence, "reason": self.reason, "advice": list(self.advice),
                "summary": self.summary()}


_AUTO = model.AUTO_MAX_LEN


def max_length(item) -> tuple[int | None, str, str]:
    """(max length, where from, why None): the argv's --max-model-len / --context-length as the
    release's own parser reads it (the last wins, abbreviations), else the length the engine logged."""
    value, why = model.argv_max_len(item.container_spec, item.engine or "", item.engine_version)
    if value is not None:
        return value, MAX_LEN_OPTION.get(item.engine or "", ""), ""
    cap = item.capacity
    if cap is not None and cap.max_len:
        return cap.max_len, "logged", ""
    return None, "", why or "no max length in its argv and none logged"


CONCURRENCY_PRECISION = 0.01    # vLLM logs "%.2fx"


def _concurrency(cap, max_len: int) -> float | None:
    """vLLM V1's "Maximum concurrency for N tokens per request: X x" where N is the max length
    compared (kv_cache_utils: max_memory_usage_bytes per layer spec, so a sliding-window or hybrid
    model's windows and states count as the engine counts them; from the release that derives its
    token figure from it, the two agree)."""
    if cap is None or cap.concurrency is None or cap.max_len != max_len:
        return None
    return float(cap.concurrency)


def _model_dtype(item) -> str | None:
    """The torch dtype a replica running "auto" resolved it to, where the engine reported it
    (SGLang's "Using KV cache dtype: torch.X"; a `model_dtype` a capacity reader may add)."""
    for source in (getattr(item.capacity, "model_dtype", None), getattr(item.observed, "resolved", None)):
        if source:
            return str(source)
    return None


def change(item, new_dtype: str) -> Change:
    """The Change of `item`'s replica to `new_dtype`: both capacities, its max length, whether it fits."""
    engine, version, old = item.engine, item.engine_version, item.effective or "auto"
    cap = item.capacity
    max_len, source, why = max_length(item)
    # "auto" is what the engine resolved it to where it runs auto now (its report of the torch dtype);
    # an auto it will run after the change is the model's dtype or the checkpoint's KV-cache
    # quantization, which nothing it reports while running another dtype says
    model_dtype = _model_dtype(item) if old == "auto" else None
    old_size, old_why = model.describe_bytes(engine or "", version, old, model_dtype)
    new_size, new_why = model.describe_bytes(engine or "", version, new_dtype, model_dtype)
    tokens = cap.tokens if cap is not None else None
    same = old == new_dtype or (old_size is not None and old_size == new_size)
    stays = "the capacity stays" if old_size is None else (
        f"{old} and {new_dtype} take {_bytes(old_size)} an element in {engine} {version}: the capacity stays")
    if same and (tokens is None or max_len is None or max_len == _AUTO):     # nothing moves, nothing to hold it to
        return Change(engine, version, old, new_dtype, tokens, tokens, Fraction(1), max_len if max_len != _AUTO
                      else None, source, True if max_len == _AUTO else None, STAYS, stays)
    if same:        # the capacity stays: held to the max length as it is (SGLang serves on below it)
        old_size = new_size = Fraction(1)
    if tokens is None:
        return Change(engine, version, old, new_dtype, None, None, None, max_len if max_len != _AUTO else None,
                      source, None, NOT_READ, READ_HINT)
    if old_size is None or new_size is None:
        reason = old_why or new_why
        if new_size is None and old_size is not None and new_dtype == "auto":
            at16 = int(tokens * old_size / 2)        # a conditional, said as one: never the verdict
            reason += f"; at a 16-bit model dtype it would hold about {at16:,} tokens" + (
                f", less than the max length {max_len:,}" if max_len and max_len != _AUTO and at16 < max_len else "")
        return Change(engine, version, old, new_dtype, tokens, None, None,
                      max_len if max_len != _AUTO else None, source, None, UNKNOWN, reason, _keep_advice(item))
    ratio = old_size / new_size
    predicted = int(tokens * ratio)
    if max_len == _AUTO:
        return Change(engine, version, old, new_dtype, tokens, predicted, ratio, None, source, True, FITS,
                      f"{source} auto: the engine fits its max length to the memory (about {predicted:,} tokens)")
    if max_len is None:
        return Change(engine, version, old, new_dtype, tokens, predicted, ratio, None, "", None, UNKNOWN, why)
    concurrency = _concurrency(cap, max_len)
    if concurrency is not None:     # vLLM V1's own figure for its max length: hybrid and sliding-window layers counted
        after = concurrency * float(ratio)
        if abs(after - 1) < CONCURRENCY_PRECISION:
            return Change(engine, version, old, new_dtype, tokens, predicted, ratio, max_len, source, None, UNKNOWN,
                          f"its logged concurrency {concurrency:.2f}x becomes about {after:.2f}x: too close to 1 to "
                          f"say whether one request of {max_len:,} tokens fits", _keep_advice(item))
        said = f"its logged concurrency for {max_len:,} tokens per request, {concurrency:.2f}x, becomes about {after:.2f}x"
        if after >= 1:
            return Change(engine, version, old, new_dtype, tokens, predicted, ratio, max_len, source, True, FITS, said)
        fitting = min(predicted, int(max_len * after))
    elif predicted >= max_len:
        return Change(engine, version, old, new_dtype, tokens, predicted, ratio, max_len, source, True, FITS,
                      stays if same else "")
    else:
        said, fitting = "", predicted
    consequence = REFUSES_START if engine == "vllm" else REFUSES_LONG
    advice = (f"{MAX_LEN_OPTION.get(engine or '', '--max-model-len')} at most about {fitting} (what the new cache "
              f"holds)",) + _keep_advice(item)
    return Change(engine, version, old, new_dtype, tokens, predicted, ratio, max_len, source, False, consequence,
                  said, advice)


def _bytes(size: Fraction) -> str:
    return f"{size} byte" + ("" if size <= 1 else "s")


def _keep_advice(item) -> tuple:
    old = item.effective
    if old and model.element_bytes(item.engine or "", item.engine_version, old) == 1:
        return (f"keep the 1-byte cache with a spelling the release accepts ({old})",)
    return ()


# -- a change to many replicas, as the commands show it -------------------------------------------

def changes(items, new_dtype_of) -> list[tuple]:
    """(item, Change) for each running replica whose dtype `new_dtype_of(item)` changes (None: it
    does not change), in namespace, deployment, role and Pod order."""
    out = []
    for item in sorted(items, key=lambda i: (i.namespace or "", i.deployment or "", i.role or "", i.pod or "")):
        if item.pod is None or item.engine is None:
            continue
        new = new_dtype_of(item)
        if new is None or new == (item.effective or "auto"):
            continue
        out.append((item, change(item, new)))
    return out


def _operator_part(item, role) -> tuple[list, int | None] | None:
    """(the operator's own --kv-cache-dtype occurrences, where the role's extraArgs start) in the
    replica's argv, as judge/verify.stale_reason reads the render; None when not told."""
    from kubectl_kvcache.judge.verify import extra_args_start

    if role is None or item.container_spec is None or item.takeover:
        return None
    start = extra_args_start(role, list(item.container_spec.get("command") or ()))
    own = [o for o in item.occurrences if o.get("source") == "command" and (start is None or o["index"] < start)]
    return own, start


def _winner(item):
    return item.occurrences[item.winner] if item.winner is not None and item.winner < len(item.occurrences) else None


def moved_to(item, role, dtype: str) -> str | None:
    """The dtype a replica runs with once its deployment is re-created on a Binding of `dtype`
    (recover): the Binding's, unless the role's own flag or command decides it (None: unchanged)."""
    part = _operator_part(item, role)
    if part is None:
        return None
    own, _ = part
    win = _winner(item)
    return dtype if win is None or win in own else None


def after_setting_off(item, role) -> str | None:
    """The dtype a replica runs with once the Setting is off and its deployment rolled: the operator
    renders no --kv-cache-dtype, so the role's own flag if it has one (the last), else the engine's
    default "auto" (None: unchanged: its own flag wins already, or its command is the role's)."""
    part = _operator_part(item, role)
    if part is None:
        return None
    own, _ = part
    win = _winner(item)
    if win is not None and win not in own:
        return None
    rest = [o for o in item.occurrences if o not in own]
    return str(rest[-1].get("value")) if rest and rest[-1].get("value") is not None else "auto"


def _who(item) -> str:
    if item.deployment:
        role = f" role {item.role}" if item.role else ""
        return f"ModelDeployment {item.namespace}/{item.deployment}{role}"
    return f"Pod {item.namespace}/{item.pod}"


def warnings(pairs, hint: str = READ_HINT) -> list[str]:
    """One line per deployment role whose change does not fit (the replica with the least predicted
    capacity speaks for its role: they run one argv), then one for the roles not read."""
    groups: dict = {}
    for item, ch in pairs:
        groups.setdefault((_who(item), item.engine), []).append((item, ch))
    out, unread = [], []
    for (who, engine), members in groups.items():
        failing = [(i, c) for i, c in members if c.fits is False]
        if failing:
            item, ch = min(failing, key=lambda p: p[1].predicted or 0)
            what = ("vLLM refuses to start (its max length no longer fits the KV cache)" if engine == "vllm"
                    else "SGLang starts, and refuses inputs longer than the new capacity")
            fits = "; ".join(ch.advice)
            why = (f"below its max length {ch.max_len:,} ({ch.max_len_source})" if (ch.predicted or 0) < (ch.max_len or 0)
                   else f"and {ch.reason}: one request of its max length {ch.max_len:,} ({ch.max_len_source}) "
                        f"no longer fits")
            out.append(f"{who} (Pod {item.pod}, {engine} {ch.version}): {ch.old} -> {ch.new} takes its KV cache "
                       f"from {ch.tokens:,} to about {ch.predicted:,} tokens, {why}: {what}"
                       + (f"; what fits: {fits}" if fits else ""))
        elif all(c.consequence == NOT_READ for _, c in members):
            unread.append(who)
    if unread:
        out.append(f"{', '.join(unread)}: {hint.replace('capacity', 'KV-cache capacity', 1)}; what the change does "
                   f"to it is not predicted")
    return out


def off_lines(pairs, hint: str = READ_HINT) -> list[str]:
    """`setting off`: every warning, then one line per deployment role that still fits or is not decided."""
    out = warnings(pairs, hint)
    said: set = set()
    for item, ch in pairs:
        who = _who(item)
        if who in said or ch.fits is False or ch.consequence == NOT_READ:
            continue
        if any(c.fits is False for i, c in pairs if _who(i) == who):
            continue
        said.add(who)
        out.append(f"{who} (Pod {item.pod}): {ch.summary()}")
    return out


def view(pairs, hint: str = READ_HINT) -> list[dict]:
    """The structured form: one entry per replica (`hint`: how the capacity not read is read)."""
    out = []
    for item, ch in pairs:
        entry = {"namespace": item.namespace, "pod": item.pod, "container": item.container,
                 "deployment": item.deployment, "role": item.role} | ch.to_dict()
        if ch.consequence == NOT_READ:
            entry |= {"reason": hint, "summary": f"{ch.old} -> {ch.new}: {hint}"}
        out.append(entry)
    return out



OWN_FLAG = "role-own-flag"      # check's finding whose fix (remove the role's own flag) changes its dtype


def with_fixes(report, pairs, hint: str = READ_HINT):
    """check's report with each role-own-flag fix saying what the change does to the role's KV
    caches (the warnings of `pairs`, grouped by their ModelDeployment)."""
    by_deployment: dict = {}
    for item, ch in pairs:
        by_deployment.setdefault((item.namespace, item.deployment), []).append((item, ch))
    findings = []
    for f in report.findings:
        group = by_deployment.get((f.namespace, f.name)) if f.code == OWN_FLAG else None
        said = warnings(group, hint) if group else []
        findings.append(f.replace(fix=f"{f.fix}; its KV cache then: " + "; ".join(said)) if said else f)
    return report.replace(findings=findings)
