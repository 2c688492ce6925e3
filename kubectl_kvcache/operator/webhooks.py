"""What the operator's admission webhooks refuse about the dtype, modelled from its Go code and
tests (gpustack/gpustack-operator at 6678d71, pkg/worker/webhooks/worker/):

- ModelDeployment (`model_deployment_kv_cache_dtype_test.go`: TestValidateModelDeploymentKVCacheDtype,
  TestModelDeploymentWebhook_KVCacheDtypeReadsTheSetting): on create AND update, a role's extraArgs
  entry naming --kv-cache-dtype is refused, one error per entry (`spec.roles[i].extraArgs[j]`, the
  entry as the bad value; a separate value is not an error of its own). Spellings: the flag, its
  `=` form, the underscore spelling (vLLM only: vLLM's parser reads `_` as `-`), an abbreviation
  argparse could resolve (`--kv-cache-dt=fp8`). Not refused: a longer flag of the same stem
  (`--kv-cache-dtype-skip-layers`), a deployment without spec.kvCache, a role that sets `command`,
  a deployment being deleted, the Setting off.
- ModelDeployment, the arguments the operator owns (`model_deployment.go` at 049325a5:
  validateModelDeploymentRoleExtraArgs; the catalog modelDeploymentOwnedKeys, `OWNED_ARGS`): on
  create AND update, whatever the Setting, with or without spec.kvCache, in a take-over role too,
  and while the deployment is being deleted (the handler keeps validating updates then:
  ReceiveDeletionUpdate), an extraArgs entry naming an owned key is refused (`field.Invalid`, one
  per entry). SGLang owns its store keys and its three disaggregation keys; vLLM its transfer and
  events configs. The dtype is not among them (`owned_arg_refusals`). An entry is read as the key
  by ModelDeploymentOwnedArg (6678d71: ModelDeploymentOwnsArg resolves through it, prefixes
  included); the release at 049325a5 compared the name before `=` exactly, which this contains.
- KVCachePoolBinding (`kv_cache_pool_binding.go`: validateKVCachePoolBindingDomain,
  validateKVCachePoolBindingDtypeBinds, validateKVCachePoolBindingImmutable): spec.domain.dtype is
  required and lowercase, not an enum; `auto` is refused only on CREATE and only with the Setting
  on (a stored `auto` Binding stays updatable); poolRef and every domain field are immutable; the
  domain name is a DNS-1123 label; blockSize > 0.
- The Setting (`settingtest.MergeDelegatedSettings` cases): unset reads its default, on; the
  operator caches it, so a change reaches the webhooks within about 30 s.

Which spellings name an owned flag is ModelDeploymentResolveArg
(pkg/worker/controllers/worker/model_deployment_connector.go; `resolve_arg` here): vLLM's `_` to
`-` up to the first `.`, a dotted tail cut, then the exact key, and ANY prefix longer than `--`
of a key (an exact other owned flag excepted), erring toward refusing. The Go also excepts an exact
listen flag (modelDeploymentListenArgs at 6678d71, its list not read here): it matters only for an
entry that is exactly a listen flag AND a prefix of an owned key, which this model refuses. The ModelDeployment rule
itself is applied by check's roles (judge/checks/roles.py); the tests' stand-in admits with it
(tests/operator_model.py md_refusals). The rules of the Pod
injection webhook's resolution (pod_kv_cache_resolve.go, inject/types.go, inject/engine.go) are
`injection_refusals`.
"""

from __future__ import annotations

import re

from kubectl_kvcache.operator import api, masters
from kubectl_kvcache.record import Record

# The webhooks' names, as the API server quotes them in a refusal (`admission webhook "NAME" denied
# the request: ...`): pkg/worker/webhooks/worker/zz_generated.webhooks.go.
INJECTION_WEBHOOK = "mutate.gpustack-worker-kvcache.core.v1.pod"         # Pods labelled inject=true, CREATE
MODEL_DEPLOYMENT_WEBHOOK = "validate.worker.gpustack.ai.v1alpha1.modeldeployment"   # CREATE, UPDATE
DTYPE_ARG = "--kv-cache-dtype"
SETTING_PROPAGATION_SECONDS = 30     # the operator's settings cache (docs/reference/settings.md)

# The (engine, key) catalog of the arguments the operator owns whatever the Setting and whether a
# pool is attached or not (controllers/worker/model_deployment_connector.go: modelDeploymentOwnedKeys,
# read at 6678d71d3c725c4ec79d4c06992cf621f1df8b5a and 049325a5dfca3da815de7decdd4360bbb238ba15,
# alike). The dtype is NOT in it: it is owned only through ModelDeploymentKVCacheOwnedArg, while
# spec.kvCache is set and the Setting is on (model_deployment_refusals).
OWNED_ARGS = {
    "vllm": ("--kv-transfer-config", "--kv-events-config"),
    "sglang": ("--hicache-storage-backend", "--hicache-storage-backend-extra-config", "--disaggregation-mode",
               "--disaggregation-transfer-backend", "--disaggregation-bootstrap-port"),
}
# The detail validateModelDeploymentRoleExtraArgs gives an owned argument (webhooks/worker/
# model_deployment.go at 049325a5): the key, the engine, and the way out.
OWNED_DETAIL = ('is set by the operator for engine "{engine}" and must not be supplied here, because two values for '
                'it cannot be told apart; replace the whole command line through {command} to own it instead')
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class FieldError(Record):
    """One field.Error the webhook returns: its type, path, bad value and detail."""

    __slots__ = ("type", "field", "value", "detail")

    def __init__(self, type: str, field: str, value, detail: str):
        self.type = type            # Required | Invalid | Forbidden | Duplicate | NotFound
        self.field = field
        self.value = value
        self.detail = detail

    def __str__(self):
        if self.type == "NotFound":         # field.NotFound: `spec.poolRef.name: Not found: "absent"`
            return f"{self.field}: Not found: {self.value!r}" + (f": {self.detail}" if self.detail else "")
        if self.type == "Forbidden":        # field.Forbidden: `spec.poolRef.name: Forbidden: <detail>`
            return f"{self.field}: Forbidden: {self.detail}"
        shown = "" if self.type == "Required" else f": {self.value!r}"
        return f"{self.field}: {self.type} value{shown}: {self.detail}"


def vllm_flag_key(key: str) -> str:
    """vLLM's own rewrite of a flag key: `_` -> `-` between the leading `--` and the first `.`
    (model_deployment_connector.go: modelDeploymentVLLMFlagKey)."""
    if not key.startswith("--"):
        return key
    head, dot, tail = key.partition(".")
    return head.replace("_", "-") + dot + tail


def resolve_arg(engine: str, arg: str, keys) -> str | None:
    """Which of `keys` the engine's parser reads a command-line entry as, or None
    (model_deployment_connector.go: ModelDeploymentResolveArg). The name is the entry before `=`
    (ModelDeploymentArgName); for vLLM it is rewritten and its dotted tail cut; `--` alone is no
    flag; an exact key wins, an exact other owned flag is itself; else the first key the name is a
    prefix of, without counting other registered flags (the operator errs toward refusing)."""
    family = "vllm" if engine in ("vllm", "vllm-ascend") else engine
    name = arg.split("=", 1)[0]
    if family == "vllm":
        name = vllm_flag_key(name).split(".", 1)[0]
    if not name.startswith("--") or len(name) == 2:
        return None
    if name in keys:
        return name
    if name in OWNED_ARGS.get(family, ()):
        return None
    return next((key for key in keys if key.startswith(name)), None)


def model_deployment_refusals(engine: str | None, roles, kv_cache: bool, setting_on: bool,
                              deleting: bool = False) -> list[str]:
    """The paths the ModelDeployment webhook refuses on create and update for its dtype rule
    (model_deployment_kv_cache_dtype_test.go: TestValidateModelDeploymentKVCacheDtype): every
    `spec.roles[i].extraArgs[j]` entry naming --kv-cache-dtype as resolve_arg reads it, in a role
    without `command`, while spec.kvCache is set and the Setting is on, and the deployment is not
    being deleted (the rule reads the Setting, so it must not hold a deployment's teardown hostage).
    `engine`: `vllm` or `sglang` (normalised); `roles`: records with `command` and `extra_args`."""
    if not setting_on or not kv_cache or deleting or engine not in OWNED_ARGS:
        return []
    return [f"spec.roles[{i}].extraArgs[{j}]" for i, role in enumerate(roles) if not role.command
            for j, entry in enumerate(role.extra_args) if resolve_arg(engine, entry, (DTYPE_ARG,)) == DTYPE_ARG]


class OwnedArg(Record):
    """One extraArgs entry the webhook refuses as an owned argument: its path, the entry, the key
    the engine reads it as, and the entry after it when that is the flag's separate value."""

    __slots__ = ("path", "entry", "key", "value_path")

    def __init__(self, path: str, entry: str, key: str, value_path: str | None = None):
        self.path = path
        self.entry = entry
        self.key = key
        self.value_path = value_path


def owned_arg_refusals(engine: str | None, roles) -> list[OwnedArg]:
    """The entries the ModelDeployment webhook refuses as arguments the operator owns
    (webhooks/worker/model_deployment.go: validateModelDeploymentRoleExtraArgs, called from
    validateModelDeploymentRoles on CREATE and UPDATE): every `spec.roles[i].extraArgs[j]` that
    resolve_arg reads as a key of OWNED_ARGS[engine]. Unlike the dtype rule it reads nothing but the
    object: not the Setting, not spec.kvCache, not `command` (the loop walks a take-over role's
    extraArgs too), and not the deletion timestamp (the handler keeps validating updates while a
    deployment is deleted: ReceiveDeletionUpdate; deletion_guard_test.go). `engine`: `vllm` or
    `sglang` (normalised); `roles`: records with `extra_args`."""
    keys = OWNED_ARGS.get(engine or "")
    if not keys:
        return []
    found = []
    for i, role in enumerate(roles):
        args = role.extra_args
        for j, entry in enumerate(args):
            key = resolve_arg(engine or "", entry, keys)
            if key is None:
                continue
            separate = "=" not in entry and j + 1 < len(args) and not args[j + 1].startswith("-")
            found.append(OwnedArg(f"spec.roles[{i}].extraArgs[{j}]", entry, key,
                                  f"spec.roles[{i}].extraArgs[{j + 1}]" if separate else None))
    return found


def binding_refusals(new: dict, setting_on: bool, old: dict | None = None) -> list[FieldError]:
    """The errors the KVCachePoolBinding webhook returns for the dtype and the domain's shape and
    immutability. `new`, `old`: {"pool", "name", "blockSize", "dtype"}; `old` None: a create."""
    errors = []
    name, dtype, block = new.get("name") or "", new.get("dtype") or "", new.get("blockSize")
    if not new.get("pool"):
        errors.append(FieldError("Required", "spec.poolRef.name", "", "a Binding grants exactly one pool, named here"))
    if not name:
        errors.append(FieldError("Required", "spec.domain.name", "", "a reuse domain with no name"))
    elif not _DNS_LABEL.match(name) or len(name) > 63:
        errors.append(FieldError("Invalid", "spec.domain.name", name,
                                 "a reuse domain is named like a Kubernetes object (a DNS-1123 label)"))
    if not isinstance(block, int) or isinstance(block, bool) or block <= 0:
        errors.append(FieldError("Invalid", "spec.domain.blockSize", block,
                                 "must be greater than 0: it is the number of tokens one cache block holds"))
    if not dtype:
        errors.append(FieldError("Required", "spec.domain.dtype", "",
                                 "the element type the cached tensors carry, in the engine's own spelling"))
    elif dtype != dtype.lower():
        errors.append(FieldError("Invalid", "spec.domain.dtype", dtype,
                                 "must be lowercase: two spellings of one type would read as two types"))
    if old is None:
        # ValidateCreate appends validateKVCachePoolBindingDtypeBinds to the spec's errors, whatever
        # they are (kv_cache_pool_binding.go, read at 6678d71)
        if setting_on and dtype == "auto":
            errors.append(FieldError("Invalid", "spec.domain.dtype", dtype,
                                     '"auto" lets each engine resolve its own from the model it loads; name the '
                                     'type, for example bfloat16'))
        return errors
    for key, path, what in (("pool", "spec.poolRef.name", "poolRef"), ("name", "spec.domain.name", "name"),
                            ("blockSize", "spec.domain.blockSize", "blockSize"),
                            ("dtype", "spec.domain.dtype", "dtype")):
        if old.get(key) != new.get(key):
            # validateKVCachePoolBindingImmutable: field.Forbidden, one per frozen field
            errors.append(FieldError("Forbidden", path, new.get(key), f"{what} is immutable"))
    return errors


def binding_fields(obj: dict) -> dict:
    """The fields binding_refusals reads, from a KVCachePoolBinding object as stored (tolerant of any
    shape)."""
    spec = found if isinstance(found := obj.get("spec"), dict) else {}
    domain = found if isinstance(found := spec.get("domain"), dict) else {}
    pool = found if isinstance(found := spec.get("poolRef"), dict) else {}
    # An omitted domain name is stored as `default` by the API server (docs/modules/kv-cache/pool.md).
    name = domain["name"] if "name" in domain else "default"
    return {"pool": pool.get("name"), "name": name, "blockSize": domain.get("blockSize"),
            "dtype": domain.get("dtype")}


# -- the Binding webhook's rules that read other objects (ValidateCreate) ------------------------
#
# gpustack/gpustack-operator at 6678d71d3c725c4ec79d4c06992cf621f1df8b5a,
# pkg/worker/webhooks/worker/kv_cache_pool_binding.go: ValidateCreate asks, once the object's own
# shape holds (validateKVCachePoolBindingSpec, validateKVCachePoolBindingDtypeBinds):
#   validateKVCachePoolBindingDomainIsUnclaimed   no other Binding holds the domain name on a master
#                                                 (a backend) both pools name;
#   validateKVCachePoolBindingCeilingFitsPool     the pool exists and the ceiling <= spec.quota.total;
#   validateKVCachePoolBindingDomainIsSeparable   beside another domain on a shared master, that
#                                                 master holds a tenant ledger (masterSeparatesDomains).
# The shape half adds the master's own tenant-name and quota rules (mooncake.ValidateQuotaPolicy-
# TenantName, ValidateQuotaPolicyQuota: pkg/worker/kvcache/mooncake/quota_policy.go at eff9edc31e33).
# The types: api/worker/v1alpha1/kv_cache_pool.go (40a4f59) spec.backends[], spec.quota.total,
# status.conditions; kv_cache_pool_binding.go (07a3054) spec.quotaCeiling, spelled spec.quota.ceiling
# at 6678d71: both are read.

INT64_MAX = 2 ** 63 - 1
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                       r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def quantity(value):
    """A resource.Quantity's exact value (a Fraction), its serialised forms: a number or
    `<sign><digits>[.<digits>]<suffix>` with a binary (Ki..Ei), decimal (n..E) or exponent suffix
    (apimachinery pkg/api/resource/quantity.go: ParseQuantity). None when it is not one."""
    from fractions import Fraction

    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    m = _QUANTITY.match(value.strip()) if isinstance(value, str) else None
    if m is None:
        return None
    number, suffix = Fraction(m.group(1)), m.group(2) or ""
    if suffix in _BINARY:
        return number * 1024 ** _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        return number * Fraction(10) ** int(suffix[1:])
    return number * Fraction(10) ** _DECIMAL.get(suffix, 0)


def _spec_of(obj) -> dict:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def ceiling_of(binding) -> tuple[str, object]:
    """(the field path, the value) of a Binding's quota ceiling, in the spelling it uses."""
    spec = _spec_of(binding)
    if "quotaCeiling" in spec:
        return "spec.quotaCeiling", spec["quotaCeiling"]
    quota = found if isinstance(found := spec.get("quota"), dict) else {}
    return "spec.quota.ceiling", quota.get("ceiling")


def pool_backends(pool) -> list[str]:
    """The masters a pool names (spec.backends; none for a missing pool or an empty list)."""
    backends = _spec_of(pool).get("backends")
    return [b for b in backends if isinstance(b, str)] if isinstance(backends, list) else []


def pool_total(pool):
    quota = _spec_of(pool).get("quota")
    return (quota if isinstance(quota, dict) else {}).get("total")


def ledgerless(pool) -> bool:
    """The pool reports its master holds no tenant ledger (QuotaLedgerAvailable False,
    MultiTenancyDisabled); any other state says nothing."""
    status = found if isinstance(found := (pool or {}).get("status"), dict) else {}
    return any(isinstance(c, dict) and c.get("type") == api.LEDGER_CONDITION and c.get("status") == "False"
               and c.get("reason") == api.NO_LEDGER_REASON for c in status.get("conditions") or ())


def backend_declares_no_ledger(backend) -> bool:
    """A managed backend whose leader runs without multi-tenancy (unset and false alike)."""
    connection = _spec_of(backend).get("connection")
    managed = connection.get("managed") if isinstance(connection, dict) else None
    if not isinstance(managed, dict):
        return False
    leader = found if isinstance(found := managed.get("leader"), dict) else {}
    return leader.get("multiTenancy") is not True


def shared_masters(own_pool, other_pool, pools) -> list[str]:
    """The backends both pools name (poolsSharedMasters); a pool not in `pools` names none."""
    return masters.shared(pool_backends(pools.get(own_pool)), pool_backends(pools.get(other_pool)))


class Cluster(Record):
    """What the Binding webhook reads besides the Binding: every Binding, the pools and the
    backends by name. `pools`/`backends` None: not readable (RBAC); `complete` False: what is
    there is part of the cluster (files), so an absent pool is not known to be absent."""

    __slots__ = ("bindings", "pools", "backends", "complete")

    def __init__(self, bindings, pools: dict | None, backends: dict | None, complete: bool = True):
        self.bindings = bindings
        self.pools = pools
        self.backends = backends
        self.complete = complete


def _tenant_name(name) -> list[FieldError]:
    if name.startswith("_"):
        return [FieldError("Invalid", "spec.domain.name", name,
                           'must not start with "_": the leader reserves that prefix and answers "Missing or '
                           'invalid tenant_id"')]
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in name):
        return [FieldError("Invalid", "spec.domain.name", name,
                           "must not contain NUL or any other control character: it does not survive the policy "
                           "file the leader loads and rewrites")]
    return []


def _quota(path, value) -> tuple[list[FieldError], list[str]]:
    """ValidateQuotaPolicyQuota: > 0 and at most 2^63-1 bytes. An unreadable value is not judged."""
    q = quantity(value if value is not None else 0)
    if q is None:
        return [], [f"{path} {value!r} is not read as a quantity here: the API server judges it"]
    if -(-q.numerator // q.denominator) > INT64_MAX:
        return [FieldError("Invalid", path, value, "must not exceed 9223372036854775807 (2^63-1) bytes")], []
    if q <= 0:
        return [FieldError("Invalid", path, value if value is not None else "0",
                           "must be greater than 0: a tenant with no quota can write nothing")], []
    return [], []


def binding_create_refusals(binding: dict, setting_on: bool, cluster: Cluster) -> tuple[list[FieldError], list[str]]:
    """(the errors the Binding webhook returns for creating `binding`, what it could not decide
    here and why). Shape first; the cross-object rules only once the shape holds, as ValidateCreate."""
    fields = binding_fields(binding)
    errors = _tenant_name(fields["name"] or "") + binding_refusals(fields, setting_on)
    path, ceiling = ceiling_of(binding)
    quota_errors, unknown = _quota(path, ceiling)
    errors += quota_errors
    if errors:
        return errors, unknown
    meta = binding.get("metadata") or {}
    key, pool_name, domain = (meta.get("namespace"), meta.get("name")), fields["pool"], fields["name"]
    if cluster.pools is None:
        return [], unknown + [f"the pools could not be read: whether KVCachePool {pool_name} exists, holds "
                              f"{path} and shares a master with another Binding's domain is the API server's to say"]
    pools = cluster.pools
    others = [b for b in cluster.bindings
              if ((b.get("metadata") or {}).get("namespace"), (b.get("metadata") or {}).get("name")) != key]
    for other in others:
        theirs = binding_fields(other)
        if theirs["name"] != domain:
            continue
        if not cluster.complete and theirs["pool"] not in pools and theirs["pool"] != pool_name:
            o = other.get("metadata") or {}
            unknown.append(f"KVCachePoolBinding {o.get('namespace')}/{o.get('name')} holds domain {domain!r} on "
                           f"KVCachePool {theirs['pool']}, which is not in the input: whether the two share a master "
                           f"is not checked")
            continue
        shared = shared_masters(pool_name, theirs["pool"], pools)
        if shared:
            o = other.get("metadata") or {}
            return [FieldError("Duplicate", "spec.domain.name", domain,
                               f"reuse domain {domain!r} is already registered by {o.get('namespace')}/"
                               f"{o.get('name')}, and both Bindings' pools name {' and '.join(shared)}: one master "
                               f"keeps one ledger entry per tenant")], unknown
    pool = pools.get(pool_name)
    if pool is None:
        if not cluster.complete:
            return [], unknown + [f"KVCachePool {pool_name} is not in the input: whether it exists and holds "
                                  f"{path} is not checked"]
        return [FieldError("NotFound", "spec.poolRef.name", pool_name, "the pool does not exist")], unknown
    total = pool_total(pool)
    q_total, q_ceiling = quantity(total), quantity(ceiling)
    if q_total is None:
        unknown.append(f"KVCachePool {pool_name}: spec.quota.total {total!r} is not read as a quantity here")
    elif q_ceiling > q_total:
        return [FieldError("Invalid", path, ceiling,
                           f"must not exceed the pool's own ceiling of {total}: a request larger than everything "
                           f"pool {pool_name!r} declares can never be granted")], unknown
    for other in others:
        theirs = binding_fields(other)
        if theirs["name"] == domain:
            continue
        for backend in shared_masters(pool_name, theirs["pool"], pools):
            if _separates(backend, (pool_name, theirs["pool"]), pools, cluster.backends, unknown):
                continue
            o = other.get("metadata") or {}
            return [FieldError("Invalid", "spec.domain.name", domain,
                               f"{o.get('namespace')}/{o.get('name')} already registers reuse domain "
                               f"{theirs['name']!r} on {backend}, and that backend holds no tenant ledger: the two "
                               f"domains would read and overwrite each other's blocks; give the backend a ledger "
                               f"(multi-tenancy on) or point this Binding at a pool on another backend")], unknown
    return [], unknown


def _separates(backend, pool_names, pools, backends, unknown) -> bool:
    """masterSeparatesDomains: observation (a pool's ledger condition) before declaration (a
    managed backend's multiTenancy); an absent object separates."""
    if any(ledgerless(pools.get(p)) for p in dict.fromkeys(pool_names) if p):
        return False
    if backends is None:
        unknown.append(f"KVCacheBackend {backend} could not be read: whether it holds a tenant ledger is the API "
                       f"server's to say")
        return True
    obj = backends.get(backend)
    return obj is None or not backend_declares_no_ledger(obj)


# -- the Pod injection webhook's resolution ---------------------------------------------------

# inject/types.go: SelectableEngines (what ParseEngine takes, compared EXACTLY: every version of the
# file in the index spells them lower case) and the one it refuses with a hint.
SELECTABLE_ENGINES = ("vllm", "sglang")
VLLM_ASCEND = "vllm-ascend"
# pod_kv_cache_resolve.go: acceptedAnnotations; the domain key has its own refusal; the two the
# webhook writes may not be supplied (checkAnnotationVocabulary).
ACCEPTED_ANNOTATIONS = ("binding", "engine", "manufacturer", "role", "container", "launch-args-forwarded")
WRITTEN_ANNOTATIONS = ("client-config", "injected")
ROLES = ("", "prefill", "decode")                  # inject/types.go: ParseRole
ASCEND = "ascend"                                  # nodefeature.ManufacturerAscend
# inject/engine.go: engineTransportConstraint -- the ONE transport an engine's store backend accepts
# (artifact spelling, API spelling); an engine without a row accepts any.
REQUIRED_TRANSPORT = {VLLM_ASCEND: ("ascend", "CANN")}


class Refusal(Record):
    """One reason the injection webhook refuses a Pod: the Go rule it follows and why."""

    __slots__ = ("rule", "why", "fix")

    def __init__(self, rule: str, why: str, fix: str):
        self.rule = rule    # `file: function`
        self.why = why
        self.fix = fix


def parse_engine(value: str, accepted=SELECTABLE_ENGINES) -> tuple[str | None, Refusal | None]:
    """inject/types.go ParseEngine: exactly one of `accepted` (the release read: `vllm`, `sglang`;
    a spelling the cluster's own injected Pods carry is added by the caller), `vllm-ascend`
    refused with its hint, anything else refused."""
    rule = "inject/types.go: ParseEngine"
    if value in accepted:
        low = value.lower()
        return (low if low in SELECTABLE_ENGINES else value), None
    key = api.ANNOTATION_PREFIX + "engine"
    if value == VLLM_ASCEND:
        return None, Refusal(rule, f"annotation {key} {value!r} names the Python package vllm_ascend, not an engine "
                                   f"(EngineUnknown)", f"set {key}=vllm and {api.ANNOTATION_PREFIX}manufacturer=ascend")
    return None, Refusal(rule, f"annotation {key} {value!r} is not one the operator configures: ParseEngine takes "
                               f"exactly {' or '.join(repr(a) for a in accepted)} (EngineUnknown)",
                         f"set {key} to {' or '.join(repr(a) for a in SELECTABLE_ENGINES)}")


def injection_refusals(annotations: dict, binding=None, binding_known: bool = True, pool=None,
                       pool_known: bool = False, admitted: bool = False,
                       accepted_engines=SELECTABLE_ENGINES) -> list[Refusal]:
    """What the injection webhook's resolution refuses, in its order (pod_kv_cache_resolve.go:
    resolve; it answers with the first). `annotations`: the kvcache.gpustack.ai/* ones; `binding`:
    the Binding record or None (`binding_known`: absence is known, not just not in the input);
    `pool`: the Pool record or None (`pool_known`: the pools were read, so its status is known);
    `admitted`: a Pod the webhook already injected (the keys it wrote are its own)."""
    found: list[Refusal] = []
    prefix = api.ANNOTATION_PREFIX
    for key in sorted(annotations):
        short = key[len(prefix):] if key.startswith(prefix) else None
        if short is None or short in ACCEPTED_ANNOTATIONS or short == "domain":
            continue
        if short in WRITTEN_ANNOTATIONS:
            if not admitted:
                found.append(Refusal("pod_kv_cache_resolve.go: checkAnnotationVocabulary",
                                     f"annotation {key} is written by the webhook and may not be supplied",
                                     f"remove annotation {key}"))
            continue
        found.append(Refusal("pod_kv_cache_resolve.go: checkAnnotationVocabulary",
                             f"annotation {key} is not one the webhook accepts",
                             f"remove or correct annotation {key} (accepted: "
                             + ", ".join(prefix + a for a in ACCEPTED_ANNOTATIONS) + ")"))
    if prefix + "domain" in annotations:
        found.append(Refusal("pod_kv_cache_resolve.go: resolve",
                             f"annotation {prefix}domain is not accepted: the reuse domain comes from the Binding",
                             f"remove annotation {prefix}domain; a second reuse domain is a second Binding"))
    engine, refused = parse_engine(annotations.get(prefix + "engine", ""), accepted_engines)
    if refused:
        found.append(refused)
    manufacturer = annotations.get(prefix + "manufacturer")
    if manufacturer is not None and engine is not None:
        # pod_kv_cache_resolve.go: resolveManufacturer (exact: nodefeature.ManufacturerAscend)
        if engine != "vllm":
            found.append(Refusal("pod_kv_cache_resolve.go: resolveManufacturer",
                                 f"annotation {prefix}manufacturer is only accepted with engine 'vllm'",
                                 f"remove annotation {prefix}manufacturer"))
        elif manufacturer != ASCEND:
            found.append(Refusal("pod_kv_cache_resolve.go: resolveManufacturer",
                                 f"annotation {prefix}manufacturer must be 'ascend' with engine 'vllm', not "
                                 f"{manufacturer!r}", f"set {prefix}manufacturer=ascend or remove it"))
        else:
            engine = VLLM_ASCEND
    role = annotations.get(prefix + "role", "")
    if role not in ROLES:
        found.append(Refusal("inject/types.go: ParseRole", f"annotation {prefix}role {role!r} is not recognised "
                                                           f"(RoleUnknown)",
                             f"set {prefix}role to 'prefill' or 'decode', or remove it"))
    name = annotations.get(prefix + "binding", "")
    if "/" in name:
        found.append(Refusal("pod_kv_cache_resolve.go: resolveBinding",
                             f"annotation {prefix}binding {name!r} must be a plain name: a Binding is resolved in "
                             f"the Pod's own namespace", f"set {prefix}binding to a Binding of this namespace"))
    elif name and binding is not None and binding.deleting:
        found.append(Refusal("pod_kv_cache_resolve.go: resolveBinding",
                             f"KVCachePoolBinding {name} is being deleted: its reuse domain is being withdrawn, so "
                             f"a Pod admitted against it would fail every cache write",
                             "point it at a Binding that is not being deleted"))
    if binding is not None and pool_known:
        found += _pool_refusals(binding.pool, pool, engine)
    return found


def _pool_refusals(pool_name, pool, engine) -> list[Refusal]:
    """pod_kv_cache_resolve.go: resolvePool, checkQuotaLedger, resolveBackend, the client endpoint."""
    if pool is None:
        return [Refusal("pod_kv_cache_resolve.go: resolvePool", f"pool {pool_name} does not exist",
                        "create the pool or point the Binding's users at another Binding")]
    found = []
    ledger = pool.ledger
    # checkQuotaLedger (read at 6678d71): absent, Unknown and False are refused, except False with
    # reason MultiTenancyDisabled -- a master declared single-tenant, joined without a tenant
    # identity (injectableDomain renders no domain). Older releases (39be4ea) refused that too.
    declared_single_tenant = ledger is not None and ledger[0] == "False" and ledger[1] == api.NO_LEDGER_REASON
    if ledger is None or (ledger[0] != "True" and not declared_single_tenant):
        said = ("does not report QuotaLedgerAvailable yet" if ledger is None else
                f"reports QuotaLedgerAvailable {ledger[0] or 'Unknown'}"
                + (f" ({ledger[1]}: {ledger[2]})" if ledger[0] == "False" else ""))
        found.append(Refusal("pod_kv_cache_resolve.go: checkQuotaLedger",
                             f"pool {pool.name} {said}: the webhook injects only against a master that answers for "
                             f"its tenant ledger", "wait for the pool to report QuotaLedgerAvailable True (False: "
                                                   "fix what its message names)"))
    if not pool.backends:
        found.append(Refusal("pod_kv_cache_resolve.go: resolveBackend", f"pool {pool.name} names no backend",
                             "name the pool's KVCacheBackend in spec.backends"))
    if not pool.client_endpoint:
        found.append(Refusal("pod_kv_cache_resolve.go: resolve", f"pool {pool.name} has not published a client "
                                                                 f"endpoint yet", "retry once the pool reports "
                                                                                  "status.clientEndpoint"))
    return found


def transport_refusal(engine: str, offers) -> Refusal | None:
    """inject/engine.go checkTransport / MatchTransport: an engine with a required transport needs a
    group of the pool offering it (`offers`: the artifact spellings, mooncake.MemberProtocols)."""
    required = REQUIRED_TRANSPORT.get(engine)
    if required is None or not offers or required[0] in offers:
        return None
    return Refusal("inject/engine.go: MatchTransport",
                   f"engine {engine!r} accepts only the {required[0]!r} transport and the pool offers "
                   f"{', '.join(offers)} (TransportUnsupported)",
                   f"set the pool's KVCacheBackend spec.transport.protocol to {required[1]!r}")
