"""Property tests of the engine model.

(a) predict() never raises, whatever the argv, environment, image or declared engine, and its
    answer is self-consistent.
(b) Differential: where Python's own argparse can decide, the prediction agrees with an
    argparse.ArgumentParser configured like the engine at that release (every option of its real
    parser with its arity, from parsers.py; the dtype with `choices=`). The real parsers themselves
    are the oracle of tests/conformance; this is the fast check of the argparse replay.
    Left out, because argparse does not model them or the model deliberately does not decide
    them: stray positionals (the engines' own positionals are not modelled), `--config`, `$(...)`,
    vLLM >= 0.33 (its final-value check is not argparse), options other than --kv... that the
    reference parser lacks, a `--` that ends the argv (whether that is an error depends on the
    engine's positionals and Python version), `--k` and dotted names.
"""

import argparse

from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from kubectl_kvcache.engine import kvparse, releases as engines
from kubectl_kvcache.engine.releases import parse_version
from kubectl_kvcache.engine.predict import predict

LAUNCH = {
    "vllm": ["vllm", "serve", "org/model"],
    "sglang": ["python3", "-m", "sglang.launch_server", "--model-path", "org/model"],
}


def run(argv, engine, version, env=None, env_from=None, image="", declared=None, manufacturer=None,
        launch=None):
    launch = LAUNCH[engine] if launch is None else launch
    container = {"name": "engine", "image": image, "command": launch + list(argv)}
    if env is not None:
        container["env"] = env
    if env_from is not None:
        container["envFrom"] = env_from
    return predict(container, engine if declared is None else declared, version, manufacturer)


# --- the alphabet ---------------------------------------------------------------------------

DTYPE_SPELLINGS = ["--kv-cache-dtype", "--kv", "--kv-c", "--kv-ca", "--kv-cache", "--kv-cache-d", "--kv-cache-dt",
                   "--kv-cache-dtyp", "--kv_cache_dtype", "--kv-cache_dtype", "--kv_cache", "--KV-CACHE-DTYPE"]
OTHER_KV = ["--kv-transfer-config", "--kv-t", "--kv-cache-memory-bytes", "--kv-sharing-fast-prefill",
            "--kv-cache-metrics", "--kv-cache-metrics-sample", "--kv-offloading-size", "--kv-cache-dtype-skip-layers",
            "--kv-cache-dtype-s", "--kv-events-config", "--kv-canary-sweep-interval", "--kv-foo"]
VALUES = ["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "bf16", "bfloat16", "float16", "fp4_e2m1", "nvfp4",
          "mxfp8", "ultraquant_4bit", "octave_k3v4", "FP8", "Auto", "half", "fp16", "", "fp8 ", "-1", "-", "8000"]
SPACE_TOKENS = ["--kv-cache-dtype fp8", "--kv x", "--port 1", "--kv-x=a b"]

plain_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8).filter(
    lambda s: not s.startswith("-"))
value = st.one_of(st.sampled_from(VALUES), plain_text)


def _joined(option, val):
    return [f"{option}={val}"]


# One "item" is a short list of tokens; an argv is a concatenation of items. Options are often
# followed by a value, so that many argvs parse (and --port/--host always are: see reference()).
option = st.sampled_from(DTYPE_SPELLINGS + OTHER_KV)
item = st.one_of(
    st.tuples(option, value).map(list),
    st.tuples(st.sampled_from(DTYPE_SPELLINGS[:1] * 4 + DTYPE_SPELLINGS), st.sampled_from(VALUES[:8])).map(list),
    option.map(lambda o: [o]),
    st.builds(_joined, option, value),
    value.map(lambda v: [v]),
    st.sampled_from([["--port", "8000"], ["--host", "0.0.0.0"], ["--port=8000"], ["--"]]),
    st.sampled_from(SPACE_TOKENS).map(lambda t: [t]),
)
argv_items = st.lists(item, max_size=5).map(lambda items: [t for it in items for t in it])

VLLM_VERSIONS = ["0.3.3", "0.4.0", "0.4.1", "0.4.2", "0.4.3", "0.5.0", "0.5.1", "0.6.0", "0.6.6", "0.7.0", "0.8.5",
                 "0.9.0", "0.10.0", "0.10.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.17.0", "0.18.0", "0.19.0",
                 "0.20.0", "0.25.0", "0.28.0", "0.29.0", "0.30.0", "0.32.0"]
SGLANG_VERSIONS = ["0.2.13", "0.2.14", "0.4.1", "0.4.2", "0.4.8", "0.4.9", "0.5.3", "0.5.4", "0.5.4.post2",
                   "0.5.4.post3", "0.5.12", "0.5.13", "0.5.16", "0.5.18", "0.5.20", "0.5.21", "0.5.23"]
argparse_releases = st.one_of(st.tuples(st.just("vllm"), st.sampled_from(VLLM_VERSIONS)),
                              st.tuples(st.just("sglang"), st.sampled_from(SGLANG_VERSIONS)))


# --- (a) predict() never raises -------------------------------------------------------------

ANY_TOKEN = st.one_of(
    st.sampled_from(DTYPE_SPELLINGS + OTHER_KV + VALUES + SPACE_TOKENS
                    + ["--", "--port", "--host", "--config", "--config=c.yaml", "--k", "--kv-cache-dtype.x",
                       "--kv-cache-dtype=fp8", "$(X)", "$(SECRET)", "$(UNDEFINED)", "fp8$(CM)", "--kv-cache-dtype=$(X)",
                       "$$(X)", "$(", "$", "-tp", "-O3", "--kv-canary", "--kv-events-config"]),
    st.text(max_size=12),
)
ENVS = st.sampled_from([
    None,
    [{"name": "X", "value": "fp8"}],
    [{"name": "X", "value": "--kv-cache-dtype"}, {"name": "CM", "value": ""}],
    [{"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
     {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
     {"name": "X", "value": "$(SECRET)"}],
])
ENV_FROM = st.sampled_from([None, [{"configMapRef": {"name": "engine-env"}}]])
IMAGES = st.sampled_from(["", "vllm/vllm-openai:v0.29.0", "lmsysorg/sglang:v0.5.18-cu129",
                          "gpustack/runner:cuda12.9-vllm0.33.0", "quay.io/ascend/vllm-ascend:v0.33.0",
                          "vllm/vllm-openai@sha256:" + "0" * 64, "example.com/x:latest"])
LAUNCHERS = st.sampled_from([
    None, ["vllm", "serve"], ["sglang", "serve"], ["exec", "env", "A=1", "tini", "--", "vllm", "serve"],
    ["dumb-init", "python3", "-u", "-m", "sglang.launch_server"], ["python3", "-m", "vllm.entrypoints.cli.main"],
    ["my-launcher"], [],
])
ANY_VERSION = st.one_of(st.sampled_from(VLLM_VERSIONS + SGLANG_VERSIONS + ["0.33.0", "0.5.4post3", "v0.7.0"]),
                        st.none(), st.text(max_size=8))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(engine=st.sampled_from(["vllm", "sglang"]),
       declared=st.sampled_from([None, "vLLM", "SGLang", "VLLM", "tgi", ""]),
       version=ANY_VERSION, argv=st.lists(ANY_TOKEN, max_size=10), env=ENVS, env_from=ENV_FROM, image=IMAGES,
       launcher=LAUNCHERS, manufacturer=st.sampled_from([None, "ascend", "nvidia"]))
@example(engine="vllm", declared="vLLM", version="0.29.0", argv=["--kv-cache-dtype", "fp8$(CM)"],
         env=[{"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}], env_from=None,
         image="", launcher=None, manufacturer=None)
@example(engine="vllm", declared="vLLM", version="0.33.0", argv=["--kv-cache-dtype", "fp8$(CM)", "--kv-cache-dtype"],
         env=[{"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}], env_from=None,
         image="", launcher=None, manufacturer="ascend")
@example(engine="vllm", declared=None, version="0.3.3", argv=["--", "fp8$(CM)"],  # crashed: unknown positional
         env=[{"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}], env_from=None,
         image="", launcher=None, manufacturer=None)
def test_predict_never_raises(engine, declared, version, argv, env, env_from, image, launcher, manufacturer):
    p = run(argv, engine, version, env=env, env_from=env_from, image=image, declared=declared or None,
            manufacturer=manufacturer, launch=launcher)
    assert p.outcome in (kvparse.OK, kvparse.REJECTED, kvparse.UNKNOWN)
    assert isinstance(p.reason, str) and p.reason
    if p.outcome == kvparse.OK and p.version is not None:
        assert p.error is None
        prof = engines.profile(p.engine, parse_version(p.version))
        assert p.effective is None or p.effective in prof.accepted
    elif p.outcome == kvparse.OK:       # the release is unread and every release it may be agrees
        assert p.error is None
    else:
        assert p.effective is None
    if p.outcome == kvparse.REJECTED:
        assert p.error in (kvparse.INVALID_VALUE, kvparse.AMBIGUOUS, kvparse.MISSING_VALUE, kvparse.UNRECOGNIZED,
                           kvparse.IGNORED_VALUE, kvparse.REQUIRED, kvparse.CONFIG_ERROR, kvparse.EXITS,
                           kvparse.START_UP)
    if p.outcome == kvparse.UNKNOWN:
        assert p.error is None
    if p.version is not None:
        assert p.version_source in (engines.SPEC_VERSION, engines.IMAGE_TAG, engines.MINIMUM)


@settings(max_examples=200, deadline=None)
@given(script_words=st.lists(ANY_TOKEN, max_size=8), glue=st.sampled_from([" ", " ; ", " && ", "\n", " | "]),
       shell=st.sampled_from([["sh", "-c"], ["bash", "-lc"], ["/bin/sh", "-ec"]]), env=ENVS)
def test_predict_never_raises_through_a_shell(script_words, glue, shell, env):
    script = "exec vllm serve m " + glue.join(script_words)
    p = predict({"command": shell + [script], "env": env}, "vllm", "0.29.0")
    assert p.outcome in (kvparse.OK, kvparse.REJECTED, kvparse.UNKNOWN) and p.reason


# --- (b) differential against argparse ------------------------------------------------------

class ArgparseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ArgparseError(message)


def _checker(type_name):
    def convert(value):
        if not kvparse.type_accepts(type_name, value):
            raise argparse.ArgumentTypeError(f"invalid {type_name} value")
        return value
    return convert


ENTRY = {"vllm": "serve", "sglang": "launch_server"}


def reference_parser(engine, version):
    """argparse configured like ENGINE at VERSION: every option of the release's real parser with its
    arity (parsers.py) and its value type (the model's vocabulary), the dtype and the options whose
    choices are fixed in the release's code (fixed_choices) with `choices=`.
    Options whose fate the model does not take from argparse (the engine's own actions, opaque
    types, start-up checks) are collected in `parser.unmodelled`."""
    v = parse_version(version)
    prof = engines.profile(engine, v)
    known = kvparse.facts(prof)
    parser = _Parser(prog=engine, add_help=False, allow_abbrev=True, exit_on_error=False)
    parser.unmodelled = {name for entry, name in known.start_up if entry == ENTRY[engine]}
    for k, (name, arity) in enumerate(prof.table):
        if not name.startswith("-"):
            continue
        kind, *rest = (known.kinds.get(name) or "store str").split(" ")
        type_name = rest[0] if rest and rest[0] != "file" else "str"
        if kind not in ("store", "append", "extend") or type_name.startswith("opaque") or "file" in rest:
            parser.unmodelled.add(name)
        typed = {} if type_name == "str" or type_name.startswith("opaque") else {"type": _checker(type_name)}
        if name in prof.fixed_choices:   # choices read from a registry fixed in the release's code
            typed["choices"] = dict(prof.choices)[name]
        if name == engines.DTYPE_OPTION:
            parser.add_argument(name, dest="kv_cache_dtype", choices=sorted(prof.accepted))
        elif arity == "0":
            parser.add_argument(name, dest=f"o{k}", action="store_true")
        elif arity in ("?", "*", "+"):
            parser.add_argument(name, dest=f"o{k}", nargs=arity, **typed)
        elif arity.isdigit() and arity != "1":
            parser.add_argument(name, dest=f"o{k}", nargs=int(arity), **typed)
        else:
            parser.add_argument(name, dest=f"o{k}", **typed)
    return parser


def vllm_rewrite(tokens):
    """vLLM's own pre-pass: `_` -> `-` in the name part of every `--` token."""
    out = []
    for t in tokens:
        if t.startswith("--"):
            name, eq, val = t.partition("=")
            t = name.replace("_", "-") + eq + val
        out.append(t)
    return out


def reference(engine, version, tokens):
    """('ok', value) / ('rejected', message), or None where argparse is not a model of the engine."""
    parser = reference_parser(engine, version)
    if engine == "vllm" and engines.profile(engine, parse_version(version)).underscores:
        tokens = vllm_rewrite(tokens)
    if "--" in tokens and tokens.index("--") == len(tokens) - 1:
        return None  # a trailing `--`: see the module docstring
    for t in tokens:
        if t == "--":
            break
        if t.startswith("-") and not t.startswith("---"):
            try:
                found = parser._parse_optional(t)
            except (ArgparseError, argparse.ArgumentError):
                found = None
            for hit in (found if isinstance(found, list) else [found]):
                action = hit[0] if isinstance(hit, tuple) else None
                if action is not None and set(action.option_strings) & parser.unmodelled:
                    return None  # decided by the engine's own code (see reference_parser)
    try:
        namespace, extras = parser.parse_known_args(tokens)
    except (ArgparseError, argparse.ArgumentError) as e:
        return ("rejected", str(e))
    before_dd = extras[:extras.index("--")] if "--" in extras else extras
    for extra in before_dd:
        if parser._parse_optional(extra) is None:
            return None  # a stray positional: the engine's own positionals are not modelled
        if not extra.lower().startswith("--kv"):
            return None  # some option the reference parser lacks but the engine may have
    if extras:
        return ("rejected", "unrecognized arguments: " + " ".join(extras))
    return ("ok", getattr(namespace, "kv_cache_dtype", None))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(release=argparse_releases, tokens=argv_items)
# regressions: each of these once disagreed with argparse
@example(release=("vllm", "0.29.0"), tokens=["--KV-CACHE-DTYPE", "fp8"])
@example(release=("sglang", "0.5.18"), tokens=["--KV-CACHE-DTYPE=bf16"])
@example(release=("vllm", "0.10.2"), tokens=["--kv-cache-memory-bytes", "--kv-cache-dtype fp8"])
@example(release=("vllm", "0.10.2"), tokens=["--kv-cache-memory-bytes", "--kv-x=a b", "--kv-cache-dtype", "fp8"])
@example(release=("vllm", "0.29.0"), tokens=["--kv-cache-dtype", "--kv-cache-dtype fp8"])
# the boundaries engines.md names
@example(release=("vllm", "0.6.6"), tokens=["--kv", "fp8"])
@example(release=("vllm", "0.7.0"), tokens=["--kv", "fp8"])
@example(release=("vllm", "0.10.1"), tokens=["--kv-cache", "fp8"])
@example(release=("vllm", "0.10.2"), tokens=["--kv-cache", "fp8"])
@example(release=("vllm", "0.18.0"), tokens=["--kv-cache-dt", "fp8"])
@example(release=("vllm", "0.19.0"), tokens=["--kv-cache-dt", "fp8"])
@example(release=("vllm", "0.5.0"), tokens=["--kv_cache_dtype", "fp8"])
@example(release=("vllm", "0.5.1"), tokens=["--kv_cache_dtype", "fp8"])
@example(release=("sglang", "0.4.8"), tokens=["--kv", "fp8_e5m2"])
@example(release=("sglang", "0.4.9"), tokens=["--kv", "fp8_e5m2"])
@example(release=("sglang", "0.5.12"), tokens=["--kv-c", "bf16"])
@example(release=("sglang", "0.5.13"), tokens=["--kv-c", "bf16"])
@example(release=("sglang", "0.5.13"), tokens=["--kv-cache", "bf16"])
@example(release=("sglang", "0.5.18"), tokens=["--kv_cache_dtype", "bf16"])
@example(release=("vllm", "0.11.1"), tokens=["--kv-cache-dtype", "bfloat16"])   # a check after the parse
@example(release=("vllm", "0.29.0"), tokens=["--kv-cache-dtype", "bogus", "--kv-cache-dtype", "fp8"])
@example(release=("vllm", "0.29.0"), tokens=["--kv-cache-dtype="])
@example(release=("vllm", "0.29.0"), tokens=["--kv-cache-dtype", "fp8", "--", "x"])
def test_differential_against_argparse(release, tokens):
    engine, version = release
    expected = reference(engine, version, list(tokens))
    if expected is None:
        return
    p = run(tokens, engine, version)
    if p.parsed is not None:
        p = p.parsed    # argparse is held against the parse's own verdict, not the checks after it (attention.py)
    note(f"argparse: {expected}; model: {p.outcome} {p.effective} {p.error}: {p.reason}")
    if p.outcome == kvparse.UNKNOWN:
        # only where engine_data itself says it does not know: an undated or arity-unknown option
        assert "is not known" in p.reason
        return
    if expected[0] == "ok":
        assert (p.outcome, p.effective) == (kvparse.OK, expected[1])
    else:
        assert p.outcome == kvparse.REJECTED
