"""What the operator computes that the plugin never needs to: its renderer's whole argument list,
the env it sets, the Pod commands it admits and the ModelDeployment webhook's dtype refusals,
built from the plugin's own models of the operator (kubectl_kvcache/operator/renderer.py,
webhooks.py, each citing the Go code it follows) for the tests and the stand-in controller
(tests/cluster/operator_standin.py). Test code: not shipped."""

from kubectl_kvcache.operator import renderer, webhooks

# the ModelDeployment webhook's refusal (pkg/worker/webhooks/worker/, model_deployment_kv_cache_dtype_test.go;
# the rule: kubectl_kvcache/operator/webhooks.py's docstring)
MD_REFUSAL = f'"{webhooks.DTYPE_ARG}" is set by the operator while spec.kvCache names a pool'


def rendered_args(engine: str, dtype: str | None, store: bool = True, kind: str = "", p2p: bool = False,
                  kv_events: bool = False) -> list:
    """The arguments the renderer appends, in its order: connector, the dtype (only beside a store,
    and only when given: the Setting on), then --kv-events-config (vLLM only)."""
    if engine == "sglang":
        args = [renderer.SGLANG_BACKEND_ARG, renderer.SGLANG_BACKEND_VALUE]
        return args + ([renderer.DTYPE_ARG, dtype] if dtype else [])
    args = []
    document = renderer.vllm_transfer_config(engine, kind, store, p2p)
    if document is not None:
        args += [renderer.TRANSFER_CONFIG_ARG, document]
    if store and dtype:
        args += [renderer.DTYPE_ARG, dtype]
    if kv_events:
        args += [renderer.EVENTS_CONFIG_ARG, renderer.KV_EVENTS_DOC]
    return args


def rendered_env(engine: str, store: bool = True) -> list:
    if not store:
        return []
    if engine == "sglang":
        return [{"name": renderer.SGLANG_MASTER_ENV, "value": "mooncake-master:50051"}]
    return [{"name": renderer.CONFIG_PATH_ENV, "value": renderer.CONFIG_FILE_PATH}]


def deployment_command(base: list[str], rendered: list[str], extra_args: list[str]) -> list:
    """A ModelDeployment Pod's command: base, the rendered arguments, then the role's extraArgs."""
    return list(base) + list(rendered) + list(extra_args)


def defaulted_args(engine: str, kind: str, existing: list[str]) -> list:
    """The defaulted arguments the webhook adds after the rendered ones, each only when the
    container does not already pass its flag (injectPod reads the container's args first)."""
    if engine != "sglang":
        return []
    groups = renderer.SGLANG_DEFAULTED + (renderer.SGLANG_DECODE_DEFAULTED if kind == "decode" else ())
    out = []
    for group in groups:
        flag = group[0]
        if any(t == flag or t.startswith(flag + "=") for t in existing):
            continue
        out += list(group)
    return out


def injected_args(engine: str, kind: str, command: list[str], args: list[str], rendered: list[str]) -> list:
    """An injected container's args after admission: its own, the rendered ones, then the defaulted."""
    return list(args) + list(rendered) + defaulted_args(engine, kind, list(command) + list(args))


def names_dtype(entry: str, engine: str) -> bool:
    """Whether one command-line entry names --kv-cache-dtype as the webhook reads it for `engine`
    (`vllm`, `vllm-ascend` or `sglang`): resolve_arg against the dtype key."""
    return webhooks.resolve_arg(engine, entry, (webhooks.DTYPE_ARG,)) == webhooks.DTYPE_ARG


class _Role:
    def __init__(self, command, extra_args):
        self.command = command
        self.extra_args = tuple(extra_args or ())


def md_refusals(engine: str, roles, kv_cache: bool, setting_on: bool, deleting: bool = False) -> list:
    """The errors the ModelDeployment webhook returns for its argument rules, in its order
    (validateModelDeploymentRoles: the owned arguments, whatever the Setting, the pool, `command`
    or a deletion; then the dtype rule: a pool attached, the Setting on, no `command`, not being
    deleted). `roles`: (command, extraArgs) per role, in spec order."""
    records = [_Role(command, extra_args) for command, extra_args in roles]
    errors = []
    for owned in webhooks.owned_arg_refusals(engine, records):
        name = owned.entry.split("=", 1)[0]
        subject = f'"{owned.key}"' if name == owned.key else f'"{name}" is "{owned.key}", which'
        command = owned.path.rsplit(".", 1)[0] + ".command"
        errors.append(webhooks.FieldError("Invalid", owned.path, owned.entry,
                                          subject + " " + webhooks.OWNED_DETAIL.format(engine=engine, command=command)))
    for path in webhooks.model_deployment_refusals(engine, records, kv_cache, setting_on, deleting):
        i, j = (int(n) for n in path.replace("]", "[").split("[")[1::2])
        errors.append(webhooks.FieldError("Forbidden", path, records[i].extra_args[j],
                                          f"{MD_REFUSAL}: remove it, and name a Binding declaring the dtype "
                                          f"you want"))
    return errors
