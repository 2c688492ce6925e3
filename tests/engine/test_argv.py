"""How Kubernetes builds a container's argv (engines.md, "How Kubernetes builds the argv"):
command/args versus the image ENTRYPOINT/CMD, `$(NAME)` expansion per element, and the
environment the names come from."""

import pytest

from kubectl_kvcache.engine.argv import Argv, EnvValue, Undecidable, build_argv, container_environment, expand

VLLM_IMAGE = "vllm/vllm-openai:v0.29.0"
SGLANG_IMAGE = "lmsysorg/sglang:v0.5.18-cu129"
RUNNER_IMAGE = "gpustack/runner:cuda12.9-vllm0.29.0"
UNKNOWN_IMAGE = "example.com/team/my-server:1.0"


def texts(argv):
    assert isinstance(argv, Argv), argv
    return [t.text for t in argv.tokens]


def env_of(*entries, env_from=()):
    return container_environment(list(entries), list(env_from))


def var(name, value):
    return {"name": name, "value": value}


def secret(name, secret_name, key):
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": key}}}


# --- command / args versus the image ------------------------------------------------------

ARGV_CASES = [
    # (id, container, expected argv or None when undecidable, text the reason must hold)
    ("command-and-args",
     {"image": UNKNOWN_IMAGE, "command": ["vllm", "serve"], "args": ["m", "--kv-cache-dtype", "fp8"]},
     ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"], None),
    ("command-only-drops-cmd",
     {"image": VLLM_IMAGE, "command": ["vllm", "serve", "m"]},
     ["vllm", "serve", "m"], None),
    ("command-only-unknown-image",
     {"image": UNKNOWN_IMAGE, "command": ["python3", "-m", "sglang.launch_server"]},
     ["python3", "-m", "sglang.launch_server"], None),
    ("args-only-vllm-image-entrypoint",
     {"image": VLLM_IMAGE, "args": ["m", "--kv-cache-dtype", "fp8"]},
     ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"], None),
    ("args-only-vllm-image-with-registry",
     {"image": "docker.io/vllm/vllm-openai:v0.29.0", "args": ["m"]},
     ["vllm", "serve", "m"], None),
    ("args-only-sglang-image-execs-argv",
     {"image": SGLANG_IMAGE, "args": ["python3", "-m", "sglang.launch_server"]},
     ["python3", "-m", "sglang.launch_server"], None),
    ("args-only-runner-image-tini",
     {"image": RUNNER_IMAGE, "args": ["vllm", "serve", "m"]},
     ["tini", "--", "vllm", "serve", "m"], None),
    ("empty-command-counts-as-unset",
     {"image": VLLM_IMAGE, "command": [], "args": ["m"]},
     ["vllm", "serve", "m"], None),
    ("empty-args-with-command",
     {"image": VLLM_IMAGE, "command": ["vllm", "serve", "m"], "args": []},
     ["vllm", "serve", "m"], None),
    ("neither-known-image-undecidable",
     {"image": VLLM_IMAGE}, None, "default CMD"),
    ("both-empty-lists-undecidable",
     {"image": VLLM_IMAGE, "command": [], "args": []}, None, "default CMD"),
    ("args-only-unknown-image-undecidable",
     {"image": UNKNOWN_IMAGE, "args": ["--kv-cache-dtype", "fp8"]}, None, "ENTRYPOINT"),
    ("neither-unknown-image-undecidable",
     {"image": UNKNOWN_IMAGE}, None, "ENTRYPOINT"),
    ("no-image-args-only-undecidable",
     {"args": ["--kv-cache-dtype", "fp8"]}, None, "ENTRYPOINT"),
]


@pytest.mark.parametrize("container,expected,reason", [c[1:] for c in ARGV_CASES], ids=[c[0] for c in ARGV_CASES])
def test_build_argv(container, expected, reason):
    argv = build_argv(container)
    if expected is None:
        assert isinstance(argv, Undecidable)
        assert reason in argv.reason
    else:
        assert texts(argv) == expected


def test_old_vllm_image_entrypoint_is_the_api_server_module():
    from kubectl_kvcache.engine.releases import parse_version
    argv = build_argv({"image": "vllm/vllm-openai:v0.4.2", "args": ["--model", "m"]}, parse_version("0.4.2"))
    assert texts(argv) == ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]
    argv = build_argv({"image": "vllm/vllm-openai:v0.6.6", "args": ["--model", "m"]}, parse_version("0.6.6"))
    assert texts(argv) == ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]
    argv = build_argv({"image": "vllm/vllm-openai:v0.11.1", "args": ["m"]}, parse_version("0.11.1"))
    assert texts(argv) == ["vllm", "serve", "m"]


@pytest.mark.parametrize("version", ["0.9.0", "0.10.2", "0.11.0"])
def test_a_vllm_image_whose_entrypoint_is_not_pinned_is_unknown_naming_it(version):
    """Between the Dockerfile versions read (api_server in the 0.8.5 era, `vllm serve` from 0.11.1) the
    image's ENTRYPOINT is not pinned to a release: an args-only container is UNKNOWN, never judged as
    one of them."""
    from kubectl_kvcache.engine.releases import parse_version
    argv = build_argv({"image": f"vllm/vllm-openai:v{version}", "args": ["--model", "m"]}, parse_version(version))
    assert isinstance(argv, Undecidable)
    assert "ENTRYPOINT" in argv.reason and "docker inspect" in argv.reason and argv.cause.code == "image"


def test_token_sources_and_positions():
    argv = build_argv({"image": VLLM_IMAGE, "args": ["m", "--kv-cache-dtype", "fp8"]})
    assert [(t.source, t.index) for t in argv.tokens] == [("image", 0), ("image", 1),
                                                          ("args", 0), ("args", 1), ("args", 2)]
    assert argv.image_engine == "vllm"
    argv = build_argv({"command": ["vllm", "serve"], "args": ["m"]})
    assert [(t.source, t.index) for t in argv.tokens] == [("command", 0), ("command", 1), ("args", 0)]


# --- $(NAME) expansion ----------------------------------------------------------------------

BASE_ENV = [var("DTYPE", "fp8"), var("EMPTY", ""), var("MODEL", "org/model"), var("SPACED", "a b c")]

EXPAND_CASES = [
    # (id, element, expected text)
    ("whole-element", "$(DTYPE)", "fp8"),
    ("inside-element", "--kv-cache-dtype=$(DTYPE)", "--kv-cache-dtype=fp8"),
    ("two-references", "$(MODEL):$(DTYPE)", "org/model:fp8"),
    ("defined-empty", "x$(EMPTY)y", "xy"),
    ("escaped-dollar", "$$(DTYPE)", "$(DTYPE)"),
    ("escaped-dollar-alone", "a$$b", "a$b"),
    ("double-escape-then-reference", "$$$(DTYPE)", "$fp8"),
    ("undefined-stays-literal", "$(NOPE)", "$(NOPE)"),
    ("undefined-inside", "--kv-cache-dtype=$(NOPE)", "--kv-cache-dtype=$(NOPE)"),
    ("dollar-name-not-expanded", "$DTYPE", "$DTYPE"),
    ("dollar-brace-not-expanded", "${DTYPE}", "${DTYPE}"),
    ("unclosed-reference", "$(DTYPE", "$(DTYPE"),
    ("unclosed-then-escape", "$(A$$", "$(A$"),
    ("trailing-dollar", "fp8$", "fp8$"),
    ("lone-dollar", "$", "$"),
    ("dollar-other-char", "$x$1", "$x$1"),
    ("empty-name", "$()", "$()"),
    ("no-recursive-expansion", "$(SELF_REF)", "$(DTYPE)"),
]


@pytest.mark.parametrize("element,expected", [c[1:] for c in EXPAND_CASES], ids=[c[0] for c in EXPAND_CASES])
def test_expand(element, expected):
    env = env_of(*BASE_ENV, var("SELF_REF", "$$(DTYPE)"))
    assert expand(element, env) == (expected, None)


def test_one_element_never_splits():
    argv = build_argv({"command": ["vllm", "serve", "$(SPACED)", "--kv-cache-dtype $(DTYPE)"], "env": BASE_ENV})
    assert texts(argv) == ["vllm", "serve", "a b c", "--kv-cache-dtype fp8"]


def test_expansion_in_command_and_args_uses_whole_env():
    # command/args see every env entry, whatever its position
    container = {"command": ["vllm", "serve", "$(MODEL)"], "args": ["--kv-cache-dtype", "$(LATE)"],
                 "env": [var("MODEL", "m"), var("LATE", "fp8_e4m3")]}
    assert texts(build_argv(container)) == ["vllm", "serve", "m", "--kv-cache-dtype", "fp8_e4m3"]


# --- the environment -----------------------------------------------------------------------

ENV_CASES = [
    # (id, env entries, name, expected value: str, None = undefined, EnvValue -> text in reason)
    ("plain", [var("A", "1")], "A", "1"),
    ("refers-to-earlier", [var("A", "fp8"), var("B", "x-$(A)")], "B", "x-fp8"),
    ("refers-to-later-stays-literal", [var("B", "x-$(A)"), var("A", "fp8")], "B", "x-$(A)"),
    ("refers-to-itself-earlier", [var("A", "1"), var("A", "$(A)2")], "A", "12"),
    ("later-definition-wins", [var("A", "1"), var("A", "2")], "A", "2"),
    ("escaped-in-env", [var("A", "1"), var("B", "$$(A)")], "B", "$(A)"),
    ("empty-value", [var("A", "")], "A", ""),
    ("missing-value-is-empty", [{"name": "A"}], "A", ""),
    ("undefined", [var("A", "1")], "B", None),
    ("secret", [secret("TOKEN", "hf-token", "token")], "TOKEN", EnvValue("Secret hf-token")),
    ("configmap", [{"name": "D", "valueFrom": {"configMapKeyRef": {"name": "engine-cfg", "key": "dtype"}}}],
     "D", EnvValue("ConfigMap engine-cfg")),
    ("field-ref", [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
     "POD", EnvValue("metadata.name")),
    ("resource-field-ref", [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}],
     "CPU", EnvValue("limits.cpu")),
    ("built-from-secret", [secret("TOKEN", "hf-token", "token"), var("B", "--x=$(TOKEN)")],
     "B", EnvValue("Secret hf-token")),
]


@pytest.mark.parametrize("entries,name,expected", [c[1:] for c in ENV_CASES], ids=[c[0] for c in ENV_CASES])
def test_container_environment(entries, name, expected):
    value = env_of(*entries).lookup(name)
    if isinstance(expected, EnvValue):
        assert isinstance(value, EnvValue)
        assert expected.reason in value.reason
    else:
        assert value == expected


def test_value_from_secret_is_unknown_and_reason_names_the_secret_only():
    env = env_of(secret("TOKEN", "hf-token", "token"))
    text, reason = expand("--api-key=$(TOKEN)", env)
    assert text == "--api-key="      # the known prefix
    assert "Secret hf-token" in reason
    argv = build_argv({"command": ["vllm", "serve", "m", "--api-key", "$(TOKEN)"],
                       "env": [secret("TOKEN", "hf-token", "token")]})
    token = argv.tokens[-1]
    assert token.text is None and "hf-token" in token.reason and token.where() == "command[4]"


def test_secret_value_is_never_printed():
    # Even a (wrongly) inline value next to valueFrom is not used: valueFrom decides.
    entry = {"name": "TOKEN", "value": "s3cr3t", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}}
    env = env_of(entry)
    value = env.lookup("TOKEN")
    assert isinstance(value, EnvValue) and "s3cr3t" not in value.reason
    text, reason = expand("$(TOKEN)", env)
    assert "s3cr3t" not in text + reason


ENV_FROM_CASES = [
    # (id, envFrom, name looked up, expected: str or EnvValue reason fragment)
    ("configmap-makes-undefined-unknown", [{"configMapRef": {"name": "engine-env"}}], "DTYPE",
     EnvValue("ConfigMap engine-env")),
    ("secret-ref", [{"secretRef": {"name": "creds"}}], "ANY", EnvValue("Secret creds")),
    ("prefix-shown", [{"prefix": "VLLM_", "configMapRef": {"name": "cm"}}], "VLLM_X", EnvValue("prefix VLLM_")),
    ("explicit-env-still-known", [{"configMapRef": {"name": "engine-env"}}], "MODEL", "org/model"),
]


@pytest.mark.parametrize("env_from,name,expected", [c[1:] for c in ENV_FROM_CASES], ids=[c[0] for c in ENV_FROM_CASES])
def test_env_from(env_from, name, expected):
    env = env_of(var("MODEL", "org/model"), env_from=env_from)
    value = env.lookup(name)
    if isinstance(expected, EnvValue):
        assert isinstance(value, EnvValue) and expected.reason in value.reason
    else:
        assert value == expected


def test_env_from_makes_undefined_reference_unknown_in_argv():
    container = {"command": ["vllm", "serve", "m", "--kv-cache-dtype", "$(DTYPE)"],
                 "envFrom": [{"configMapRef": {"name": "engine-env"}}]}
    token = build_argv(container).tokens[-1]
    assert token.text is None and "engine-env" in token.reason


def test_env_from_env_entry_referring_to_undefined_name_is_unknown():
    env = env_of(var("B", "x$(A)"), env_from=[{"configMapRef": {"name": "cm"}}])
    assert isinstance(env.lookup("B"), EnvValue)


def test_unknown_element_keeps_known_prefix():
    env = env_of({"name": "D", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}})
    assert expand("--kv-cache-dtype=$(D)", env) == ("--kv-cache-dtype=", env.lookup("D").reason)
    assert expand("fp8$(D)", env)[0] == "fp8"
    # an escaped reference before it is still resolved in the prefix
    assert expand("$$(X)-$(D)", env)[0] == "$(X)-"


def test_service_link_variables_are_unknown():
    # the kubelet adds FOO_SERVICE_HOST/_PORT for Services in the namespace (enableServiceLinks)
    env = env_of(var("A", "1"))
    assert isinstance(env.lookup("REDIS_SERVICE_HOST"), EnvValue)
    assert isinstance(env.lookup("REDIS_PORT_6379_TCP_ADDR"), EnvValue)
    assert env.lookup("REDIS_HOST") is None
