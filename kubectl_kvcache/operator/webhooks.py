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
- KVCachePoolBinding (`kv_cache_pool_binding.go`: validateKVCachePoolBindingDomain,
  validateKVCachePoolBindingDtypeBinds, validateKVCachePoolBindingImmutable): spec.domain.dtype is
  required and lowercase, not an enum; `auto` is refused only on CREATE and only with the Setting
  on (a stored `auto` Binding stays updatable); poolRef and every domain field are immutable; the
  domain name is a DNS-1123 label; blockSize > 0.
- The Setting (`settingtest.MergeDelegatedSettings` cases): unset reads its default, on; the
  operator caches it, so a change reaches the webhooks within about 30 s.

The Go source of the ModelDeployment rule's spelling scan is not in the index read (only its
test): the abbreviation rule here (a prefix of --kv-cache-dtype reaching into `dtype`) is the
plugin's reading of the test's cases, said so in its one test.
"""

from __future__ import annotations

import re

from kubectl_kvcache.record import Record

DTYPE_ARG = "--kv-cache-dtype"
MD_REFUSAL = f'"{DTYPE_ARG}" is set by the operator while spec.kvCache names a pool'
SETTING_PROPAGATION_SECONDS = 30     # the operator's settings cache (docs/reference/settings.md)
_ABBREVIATION_FLOOR = "--kv-cache-d"  # shorter prefixes are shared by other --kv-cache-* options
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class FieldError(Record):
    """One field.Error the webhook returns: its type, path, bad value and detail."""

    __slots__ = ("type", "field", "value", "detail")

    def __init__(self, type: str, field: str, value, detail: str):
        self.type = type            # Required | Invalid | Forbidden
        self.field = field
        self.value = value
        self.detail = detail

    def __str__(self):
        shown = "" if self.type == "Required" else f": {self.value!r}"
        return f"{self.field}: {self.type} value{shown}: {self.detail}"


def names_dtype(entry: str, engine: str) -> bool:
    """Whether one command-line entry names --kv-cache-dtype as the webhook reads it for `engine`
    (`vllm`, `vllm-ascend` or `sglang`)."""
    if not entry.startswith("--"):
        return False
    name = entry.split("=", 1)[0]
    if engine in ("vllm", "vllm-ascend"):
        name = "--" + name[2:].replace("_", "-")
    if name == DTYPE_ARG:
        return True
    return name.startswith(_ABBREVIATION_FLOOR) and DTYPE_ARG.startswith(name)


def md_refusals(engine: str, roles, kv_cache: bool, setting_on: bool, deleting: bool = False) -> list[FieldError]:
    """The errors the ModelDeployment webhook returns for its dtype rule. `roles`: (command,
    extraArgs) per role, in spec order."""
    if not setting_on or not kv_cache or deleting:
        return []
    errors = []
    for i, (command, extra_args) in enumerate(roles):
        if command:
            continue
        for j, entry in enumerate(extra_args or ()):
            if names_dtype(entry, engine):
                errors.append(FieldError("Forbidden", f"spec.roles[{i}].extraArgs[{j}]", entry,
                                         f"{MD_REFUSAL}: remove it, and name a Binding declaring the dtype "
                                         f"you want"))
    return errors


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
        if setting_on and dtype == "auto" and not errors:
            errors.append(FieldError("Invalid", "spec.domain.dtype", dtype,
                                     '"auto" lets each engine resolve its own from the model it loads; name the '
                                     'type, for example bfloat16'))
        return errors
    for key, path in (("pool", "spec.poolRef.name"), ("name", "spec.domain.name"),
                      ("blockSize", "spec.domain.blockSize"), ("dtype", "spec.domain.dtype")):
        if old.get(key) != new.get(key):
            errors.append(FieldError("Invalid", path, new.get(key), f"{path.rsplit('.', 1)[-1]} is immutable"))
    return errors


def binding_fields(obj: dict) -> dict:
    """The fields binding_refusals reads, from a KVCachePoolBinding object as stored (tolerant of any
    shape)."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    domain = spec.get("domain") if isinstance(spec.get("domain"), dict) else {}
    pool = spec.get("poolRef") if isinstance(spec.get("poolRef"), dict) else {}
    # An omitted domain name is stored as `default` by the API server (docs/modules/kv-cache/pool.md).
    name = domain["name"] if "name" in domain else "default"
    return {"pool": pool.get("name"), "name": name, "blockSize": domain.get("blockSize"),
            "dtype": domain.get("dtype")}
