"""What the operator's renderer writes onto an engine container, modelled from its Go code
(gpustack/gpustack-operator, read at commit 6678d71):

- `pkg/worker/kvcache/inject/vllm.go:renderVLLM`: `--kv-transfer-config` first, then
  `--kv-cache-dtype <dtype>` ONLY when the role's connection has a store address
  (`hasStore := in.Connection.MasterAddress != ""`; `dtype_test.go:TestRenderDtype`, "a
  point-to-point leg without a store renders no flag"), then `--kv-events-config` on roles that
  publish KV events (llm-d routed). The store is the one that sets MOONCAKE_CONFIG_PATH.
- `inject.go:Render`: a store-less render exists only for vLLM (point-to-point transfer or KV
  event publishing); every other engine "requires a shared store connection".
- `pkg/worker/webhooks/worker/pod_kv_cache_inject.go:injectPod`: an injected container's args get
  the rendered arguments, then the defaulted ones the container does not already pass.
- ModelDeployment Pods (`controllers/worker/model_deployment_kv_cache_dtype_test.go`): base
  command, the rendered arguments, then the role's extraArgs, so a role's own later flag wins.

Pure: a container dict in, a view out. Used by judge/ (verify, check) and by the stand-in
controller of the tests and the demo cluster (tests/operator_model.py builds on it), so both follow
one model of the renderer.
"""

from __future__ import annotations

import json

from kubectl_kvcache.record import Record

DTYPE_ARG = "--kv-cache-dtype"                 # inject/types.go: KVCacheDtypeArg
TRANSFER_CONFIG_ARG = "--kv-transfer-config"   # vllm.go: vllmTransferConfigArg
EVENTS_CONFIG_ARG = "--kv-events-config"       # vllm.go: vllmKVEventsConfigArg
CONFIG_PATH_ENV = "MOONCAKE_CONFIG_PATH"       # vllm.go: vllmConfigPathEnv (set only with a store)
CONFIG_FILE_PATH = "/etc/gpustack/kvcache/client-config.json"   # stand-in path; only its presence counts
SGLANG_BACKEND_ARG = "--hicache-storage-backend"   # sglang.go: sglangBackendArg
SGLANG_BACKEND_VALUE = "mooncake"
SGLANG_MASTER_ENV = "MOONCAKE_MASTER"          # sglang.go: sglangMasterEnv

# vllm.go: vllmConnectorFor -- the store connector per engine of the vLLM family.
STORE_CONNECTORS = {"vllm": "MooncakeStoreConnector", "vllm-ascend": "AscendStoreConnector"}
# vllm-ascend also registers the same store class as MooncakeConnectorStoreV1 (vllm.go's comment).
_STORE_NAMES = frozenset(STORE_CONNECTORS.values()) | {"MooncakeConnectorStoreV1"}
# vllm.go: the point-to-point legs (vLLM proper's MooncakeConnector; vLLM-Ascend's
# vllmAscendTransferConnector).
P2P_CONNECTORS = {"vllm": "MooncakeConnector", "vllm-ascend": "MooncakeConnectorV1"}
_P2P_NAMES = frozenset(P2P_CONNECTORS.values())
MULTI_CONNECTOR = "MultiConnector"             # vllm.go: a pair on a store composes both legs

# The operator's engine minimums (docs/reference/engine-versions.md): vLLM-Ascend is an engine of
# its own to the renderer (inject/types.go: EngineVLLMAscend), derived from the pool's accelerator,
# never named by a user (SelectableEngines).
MINIMUMS = {"vllm": "0.29.0", "vllm-ascend": "0.23.0", "sglang": "0.5.18"}

# Defaulted arguments an injected SGLang container gets after the rendered ones, unless it already
# passes the flag (pod_kv_cache_inject.go:injectPod, Result.DefaultedArgs).
SGLANG_DEFAULTED = (("--enable-hierarchical-cache",),)
SGLANG_DECODE_DEFAULTED = (("--disaggregation-decode-retraction-backup", "cpu_tensor"),)

VLLM_KV_ROLES = {"": "kv_both", "server": "kv_both", "prefill": "kv_producer", "decode": "kv_consumer"}


class StoreView(Record):
    """Whether the operator rendered a store for a container, read off the Pod.

    rendered: True (a store connector or its config path), False (a render without a store: a
    point-to-point leg or an event publisher only), None (nothing the operator renders is there:
    a Pod from before the upgrade, or one this model cannot read)."""

    __slots__ = ("rendered", "reason", "connectors")

    def __init__(self, rendered: bool | None, reason: str, connectors: tuple[str, ...] = ()):
        self.rendered = rendered
        self.reason = reason
        self.connectors = connectors


def _argv(container):
    return list(container.get("command") or ()) + list(container.get("args") or ())


def _env_names(container):
    return {e.get("name") for e in container.get("env") or () if isinstance(e, dict)}


def option_value(argv, option):
    """The value of the first `option V` / `option=V` in argv, or None."""
    for i, text in enumerate(argv):
        if text == option and i + 1 < len(argv):
            return argv[i + 1]
        if text.startswith(option + "="):
            return text[len(option) + 1:]
    return None


def transfer_connectors(document: str) -> tuple[str, ...] | None:
    """The connector names a --kv-transfer-config document selects (a MultiConnector's legs
    included), or None when it is not a JSON object this model reads."""
    try:
        doc = json.loads(document)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("kv_connector"), str):
        return None
    names = [doc["kv_connector"]]
    extra = doc.get("kv_connector_extra_config")
    if doc["kv_connector"] == MULTI_CONNECTOR and isinstance(extra, dict):
        for leg in extra.get("connectors") or ():
            if isinstance(leg, dict) and isinstance(leg.get("kv_connector"), str):
                names.append(leg["kv_connector"])
    return tuple(names)


def store_view(container: dict, engine: str | None) -> StoreView:
    """Read off a rendered container whether the operator gave it a store (see StoreView)."""
    argv, env = _argv(container), _env_names(container)
    if engine == "sglang":
        # inject.go:Render refuses SGLang without a store, so an SGLang render always has one.
        if SGLANG_BACKEND_ARG in argv or SGLANG_MASTER_ENV in env:
            return StoreView(True, "")
        return StoreView(None, "")
    document = option_value(argv, TRANSFER_CONFIG_ARG)
    if document is None:
        if CONFIG_PATH_ENV in env:
            return StoreView(True, "")
        if option_value(argv, EVENTS_CONFIG_ARG) is not None:
            return StoreView(False, "the operator rendered only a KV event publisher (--kv-events-config, no "
                                    f"{TRANSFER_CONFIG_ARG}, no {CONFIG_PATH_ENV}): no store")
        return StoreView(None, "")
    names = transfer_connectors(document)
    if names is None:
        return StoreView(None, "")
    if any(n in _STORE_NAMES for n in names) or CONFIG_PATH_ENV in env:
        return StoreView(True, "", names)
    if names and all(n in _P2P_NAMES for n in names):
        return StoreView(False, f"the operator rendered a point-to-point leg without a store "
                                f"({TRANSFER_CONFIG_ARG} names {', '.join(names)}, no {CONFIG_PATH_ENV})",
                         names)
    return StoreView(None, "", names)


NO_STORE_RULE = ("the operator renders --kv-cache-dtype only beside a store, so nothing is expected "
                 "(inject/vllm.go: renderVLLM)")


# -- what the renderer writes (used by check's "after the upgrade" and the demo stand-in) ----------

def vllm_transfer_config(engine: str, kind: str, store: bool, p2p: bool) -> str | None:
    """The --kv-transfer-config document renderVLLM writes (JSON key order is not part of its contract)."""
    kv_role = VLLM_KV_ROLES.get(kind, "kv_both")
    store_leg = {"kv_connector": STORE_CONNECTORS.get(engine, STORE_CONNECTORS["vllm"]), "kv_role": kv_role}
    if not p2p:
        return json.dumps(store_leg, separators=(",", ":")) if store else None
    direct = {"kv_connector": P2P_CONNECTORS.get(engine, P2P_CONNECTORS["vllm"]), "kv_role": kv_role}
    if not store:
        return json.dumps(direct, separators=(",", ":"))
    store_leg["kv_role"] = "kv_both" if kind == "prefill" else "kv_consumer"
    return json.dumps({"kv_connector": MULTI_CONNECTOR, "kv_role": kv_role,
                       "kv_connector_extra_config": {"connectors": [direct, store_leg]}}, separators=(",", ":"))


KV_EVENTS_DOC = json.dumps({"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": "tcp://*:5557",
                            "replay_endpoint": "tcp://*:5558", "topic": "kv@"}, separators=(",", ":"))


def webhook_dtype_positions(args: list[str], engine: str | None) -> tuple[int, ...]:
    """The positions in an admitted Pod's args of the webhook's own `--kv-cache-dtype <dtype>`
    pair: the last separate-form pair, followed only by what the webhook renders after it (the
    defaulted arguments, --kv-events-config). () when the args do not end that way."""
    tail_ok = {"--enable-hierarchical-cache", "--disaggregation-decode-retraction-backup", "cpu_tensor",
               EVENTS_CONFIG_ARG}
    for i in range(len(args) - 2, -1, -1):
        if args[i] == DTYPE_ARG:
            rest = args[i + 2:]
            j = 0
            while j < len(rest):
                if rest[j] == EVENTS_CONFIG_ARG and j + 1 < len(rest):
                    j += 2
                elif rest[j] in tail_ok:
                    j += 1
                else:
                    return ()
            return (i, i + 1)
    return ()
