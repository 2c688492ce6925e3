"""Turn each corpus entry (corpus.yaml) into the containers a Pod runs, the variants an upgrade
produces, and what each variant really executes.

Independent of the plugin's engine model (kubectl_kvcache/engine), which is what the tier checks:
- `$(VAR)` in command/args is expanded here as the kubelet does (kubernetes
  third_party/forked/golang/expansion/expand.go: `$$` escapes, an undefined name stays literal,
  one element never splits);
- an args-only container runs its image's ENTRYPOINT (IMAGE_ENTRYPOINTS, from the images'
  Dockerfiles);
- a shell (`sh -c`, `bash -c`, a docs line) is run by the REAL shell (dash for sh, bash for bash)
  with stand-in programs for the engines that record the argv they are given, in an empty
  environment holding only the Pod's variables and PATH = the stand-ins (other programs are "not
  found"), inside the sandbox of isolate.py (an absolute path would run: there it has no
  network, no writable folder but its own, no root); the first engine launch recorded is the
  one judged;
- the operator's appended arguments come from kubectl_kvcache/operator/renderer.py, the model of
  the operator's Go renderer (inject/vllm.go, sglang.go; webhooks/worker/pod_kv_cache_inject.go).

A Case is one (container, release) the plugin judges; its `entry`/`argv` is what the release's
real parser reads (oracle.py's request), or None with `skip` saying why it is not an engine launch.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile

import yaml

from kubectl_kvcache.operator import renderer

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(os.path.dirname(HERE))
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
import operator_model  # noqa: E402  (tests/operator_model.py: the renderer's whole argument list)
sys.path.insert(0, HERE)
import isolate  # noqa: E402  (the sandbox every corpus shell line runs in)
CORPUS = os.path.join(HERE, "corpus.yaml")

# The ENTRYPOINT of the engine images, from their Dockerfiles:
# - vllm/vllm-openai (vllm-project/vllm docker/Dockerfile, final stage `vllm-openai`):
#   ["python3", "-m", "vllm.entrypoints.openai.api_server"] at commit 0000977eaf873be6a295cf73017976d49ca2fb9d
#   (a torch 2.7 / FlashInfer 0.2 era file, so releases up to 0.8.5 at least), ["vllm", "serve"] at
#   commit dead20baf70df70580ecb093f82b0b7b8676e4f5 (CUDA 12.9.1, apache-tvm-ffi 0.1.0b15: 0.11.1 on).
#   Between those the switch is not pinned to a release here: args-only vLLM rows are skipped there.
# - lmsysorg/sglang: not pinned here (nvidia/cuda base images set /opt/nvidia/nvidia_entrypoint.sh,
#   which runs "$@", but which base each tag uses was not read); the corpus has no args-only SGLang
#   container, and such a row would be skipped, not guessed.
VLLM_API_SERVER_UNTIL = "0.8.5"   # api_server ENTRYPOINT for releases <= this
VLLM_SERVE_FROM = "0.11.1"        # `vllm serve` ENTRYPOINT for releases >= this
IMAGE_ENTRYPOINTS = {"vllm/vllm-openai": "vllm", "lmsysorg/sglang": "sglang"}

ENGINE_PROGRAMS = ("vllm", "sglang", "python", "python3")
SHELLS = {"sh": "/bin/dash", "dash": "/bin/dash", "bash": "/bin/bash"}


def vtuple(v):
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[.]", v.replace("post", "")))


HELDOUT = os.path.join(HERE, "heldout.yaml")   # issue 38 item 3: never tuned on (test_zz_heldout.py)
# issue 52 item 3: KV-connector launch commands (connectors.py); the held-out part, whole
# repositories, runs only in test_zz_connectors_heldout.py
CONNECTORS = os.path.join(HERE, "connectors.yaml")
CONNECTORS_HELDOUT = os.path.join(HERE, "connectors_heldout.yaml")


def load(path=CORPUS):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)["commands"]


# -- Kubernetes $(VAR) expansion ------------------------------------------------------------------

def k8s_expand(text, env):
    """expand.go: `$$` -> `$`, `$(NAME)` -> env[NAME] when defined, else kept; other `$` kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] == "$" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                close = text.find(")", i + 2)
                if close >= 0:
                    name = text[i + 2:close]
                    out.append(env[name] if name in env else f"$({name})")
                    i = close + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


# -- entries -> containers ------------------------------------------------------------------------

def containers(entry):
    """[(kind, container)] a Pod runs for this entry. A docs/script line gives two: `sh -c LINE`
    (how manifests wrap a line) and `exec`, the words the shell makes of it as a command list
    (only when the line uses no variable and no command substitution: otherwise the words depend
    on values the Pod does not hold)."""
    form = entry["form"]
    env = list(entry.get("env") or ())
    if form == "container":
        c = {"name": "engine", "image": entry.get("image") or ""}
        if entry.get("command"):
            c["command"] = list(entry["command"])
        if entry.get("args"):
            c["args"] = list(entry["args"])
        if env:
            c["env"] = env
        return [("container", c)]
    if form == "compose":
        # compose: `entrypoint` replaces the image ENTRYPOINT, `command` its CMD; a string is split
        # shell-like (no shell runs), as the Compose spec says; `${VAR:-default}` interpolation is
        # rendered with no variable set (the defaults), as a fresh checkout without .env runs it
        c = {"name": "engine", "image": compose_interpolate(entry.get("image") or "")}
        for key, field in (("entrypoint", "command"), ("command", "args")):
            value = entry.get(key)
            if value is not None:
                value = compose_interpolate(value) if isinstance(value, str) else [compose_interpolate(str(v))
                                                                                   for v in value]
                c[field] = shlex.split(value) if isinstance(value, str) else value
        if env:
            c["env"] = [dict(e, value=compose_interpolate(e["value"])) if "value" in e else e for e in env]
        return [("compose", c)]
    line = entry["line"]
    out = [("sh-c", {"name": "engine", "image": "", "command": ["/bin/sh", "-c", line]})]
    if not shell_unset(line, {}) and not _SUBST.search(line):
        launches = run_shell("/bin/dash", line, {}, [])
        if launches:
            out.append(("exec", {"name": "engine", "image": "", "command": launches[0]}))
    return out


def compose_interpolate(text):
    """Compose-file interpolation with no variable set: `$$` -> `$`, `${V:-d}`/`${V-d}` -> d,
    `${V}`/`$V` -> "" (compose-spec interpolation.md)."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        inner = m.group(1)
        if inner is not None:
            for op in (":-", "-"):
                if op in inner:
                    return inner.split(op, 1)[1]
            return ""
        return ""
    return re.sub(r"\$\$|\$\{([^}]*)\}|\$[A-Za-z_][A-Za-z0-9_]*", sub, text)


_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_ASSIGN = re.compile(r"(?:^|[\s;&|(])(?:export\s+|local\s+)?([A-Za-z_][A-Za-z0-9_]*)=")
_LOOP = re.compile(r"\b(?:for|read)\s+([A-Za-z_][A-Za-z0-9_]*)")
_SUBST = re.compile(r"\$\(|`")
RUNTIME_SET = {"HOME", "PATH", "HOSTNAME", "PWD"}


def shell_unset(script, env):
    """Variables the script reads that neither the Pod nor the script itself sets."""
    used = set(_VAR.findall(script))
    assigned = set(_ASSIGN.findall(script)) | set(_LOOP.findall(script))
    return sorted(used - assigned - set(env) - RUNTIME_SET)


def pod_env(container):
    """name -> value for the shell and $(VAR): literal values expanded in order; valueFrom ones
    get a stand-in value (the kubelet sets them; their value is not in the spec)."""
    env = {}
    for e in container.get("env") or ():
        if "valueFrom" in e:
            env[e["name"]] = f"valuefrom-{e['name'].lower()}"
        else:
            env[e["name"]] = k8s_expand(str(e.get("value", "")), env)
    return env


# -- the real shell --------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _stubs():
    d = tempfile.mkdtemp(prefix="kvcache-realcmds-")
    os.chmod(d, 0o755)      # read by the sandbox's user (isolate.py: nobody under root)
    for name in ("vllm", "sglang", "python", "python3", "python3.10", "python3.11", "python3.12"):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            # a record: the count, the program name, its arguments, NUL-separated
            f.write('#!/bin/dash\nprintf \'%s\\0\' "$#" "${0##*/}" "$@" >> "$KVCACHE_RECORD"\n')
        os.chmod(path, 0o755)
    return d


_HANGS = set()


def run_shell(shell, script, env, extra):
    """The engine-program argvs the real shell runs for `shell -c script extra...`, in the
    sandbox (isolate.py: no network, no writes outside its work folder, not root): a public line
    is untrusted, and an absolute path in it runs whatever PATH holds."""
    stubs = _stubs()
    with tempfile.TemporaryDirectory() as work:
        record = os.path.join(work, "record")
        full = {k: v for k, v in env.items() if "\0" not in v}
        full.update({"PATH": stubs, "HOME": work, "KVCACHE_RECORD": record})
        # its own session, killed whole afterwards: a background job the script left (`cmd &`, a
        # wait loop) never outlives it to write into the folder while it is removed
        # the shell's exit is written to the record: a launch recorded after it was left running in
        # the background (`vllm serve ... &` last), which a container's end kills before it parses
        # anything. Which comes first is still the scheduler's choice, as it was with killpg alone
        # (every such corpus line also reads a variable the Pod does not set: counted apart)
        wrapped = ["/bin/dash", "-c", '"$@"; printf "EXIT\\0" >> "$KVCACHE_RECORD"', "wrapper", shell, "-c", script,
                   *extra]
        proc = subprocess.Popen(isolate.command(wrapped, work, (stubs,)), env=full, cwd=work,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            # a script that waits for a service forever (until curl ...; do sleep) is cut off: what
            # it started before that is recorded
            proc.wait(timeout=0.5 if script in _HANGS else 3)
        except subprocess.TimeoutExpired:
            _HANGS.add(script)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        if not os.path.exists(record):
            return []
        with open(record, encoding="utf-8", errors="surrogateescape") as f:
            words = f.read().split("\0")[:-1]
    launches = []
    i = 0
    while i < len(words) and words[i] != "EXIT":
        n = int(words[i])
        launches.append(words[i + 1:i + 2 + n])
        i += 2 + n
    return launches


# -- what a container executes ---------------------------------------------------------------------

def image_entrypoint(image, release):
    """The ENTRYPOINT an args-only container runs, or a reason it is not known."""
    repo = re.sub(r"^(docker\.io/)", "", image.split("@")[0]).rsplit(":", 1)[0] if image else ""
    engine = next((e for key, e in IMAGE_ENTRYPOINTS.items() if repo == key or repo.endswith("/" + key)), None)
    if engine == "sglang":
        return f"the ENTRYPOINT of {image} is not pinned here (build.py)"
    if engine == "vllm":
        v = vtuple(release)
        if v <= vtuple(VLLM_API_SERVER_UNTIL):
            return ["python3", "-m", "vllm.entrypoints.openai.api_server"]
        if v >= vtuple(VLLM_SERVE_FROM):
            return ["vllm", "serve"]
        return f"the vllm/vllm-openai ENTRYPOINT of {release} is not pinned here (build.py)"
    return f"the ENTRYPOINT of image {image or '(none)'} is not known"


def executed(container, release):
    """(argv of the first engine launch, None) or (None, why there is none)."""
    env = pod_env(container)
    command = [k8s_expand(str(t), env) for t in container.get("command") or ()]
    args = [k8s_expand(str(t), env) for t in container.get("args") or ()]
    if not command:
        entry = image_entrypoint(container.get("image") or "", release)
        if isinstance(entry, str):
            return None, entry
        command = entry
    argv = command + args
    if not argv:
        return None, "no argv"
    program = os.path.basename(argv[0])
    if program in SHELLS:
        split = shell_operands(argv)
        if split is None:
            return None, "a shell without -c"
        launches = run_shell(SHELLS[program], split[0], env, split[1])
        engines = [a for a in launches if engine_entry(a)[0]]
        if not engines:
            return None, "the shell starts no engine"
        return engines[0], None
    if program in ENGINE_PROGRAMS or re.match(r"^python3?(\.\d+)?$", program):
        return [program] + argv[1:], None
    return None, f"runs {program}"


def engine_entry(argv):
    """(engine, oracle entry, the args its parser reads) for an engine argv, else (None, ...)."""
    program = os.path.basename(argv[0]) if argv else ""
    rest = argv[1:]
    if program == "vllm" and rest[:1] == ["serve"]:
        return "vllm", "serve", rest[1:]
    if program == "sglang" and rest[:1] == ["serve"]:
        return "sglang", "sglang_serve", rest[1:]
    if re.match(r"^python3?(\.\d+)?$", program) and rest[:1] == ["-m"] and len(rest) > 1:
        module = rest[1]
        if module == "vllm.entrypoints.openai.api_server":
            return "vllm", "api_server", rest[2:]
        if module == "sglang.launch_server":
            return "sglang", "launch_server", rest[2:]
    return None, None, None


# -- upgrade variants ------------------------------------------------------------------------------

# dtypes tried, in order: the first the release accepts is the "accepted" one, the first it does
# not accept the "rejected" one (the release's real parser decides either way)
ACCEPT_ORDER = ("fp8", "fp8_e4m3", "fp8_e5m2", "bf16", "auto")
REJECT_ORDER = ("fp8_e4m3", "fp8_ds_mla", "nvfp4", "bfloat16", "fp4_e2m1", "int8", "bogus")


def dtypes(engine, version):
    from kubectl_kvcache.engine import parse_version, profile

    accepted = profile(engine, parse_version(version)).accepted
    good = next((v for v in ACCEPT_ORDER if v in accepted), "auto")
    bad = next(v for v in REJECT_ORDER if v not in accepted)
    return good, bad


def variants(engine, container, version):
    """[(variant name, container)]: as written; the operator's render appended as the webhook
    appends it (the store connector, then the `--kv-cache-dtype` pair, then the defaulted args;
    its env); the render after the user's own `--kv-cache-dtype`; the render with a dtype the
    release rejects. (No bare pair: renderVLLM writes the dtype only beside a store.)"""
    good, bad = dtypes(engine, version)
    base_args = list(container.get("args") or ())

    def with_args(extra, env=()):
        c = dict(container, args=base_args + extra)
        if env:
            c["env"] = list(container.get("env") or ()) + list(env)
        return c

    def render(dtype):
        rendered = operator_model.rendered_args(engine, dtype)
        defaulted = operator_model.defaulted_args(engine, "", list(container.get("command") or ()) + base_args)
        return rendered + defaulted

    env = operator_model.rendered_env(engine)
    return [("as-written", dict(container)),
            ("store", with_args(render(good), env)),
            ("user-flag", with_args([renderer.DTYPE_ARG, "auto"] + render(good), env)),
            ("rejected", with_args(render(bad), env))]


class Case:
    __slots__ = ("entry_id", "kind", "variant", "engine", "version", "container", "entry", "argv", "skip",
                 "unset", "matching", "dtype")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


_EXECUTED = {}
_CONTAINERS = {}


def cases(entries, releases):
    """Every Case of the corpus over `releases` {engine: [versions]} (each entry over its engine's).
    What a container executes is remembered for the session (the real shell runs once for it)."""
    memo = _EXECUTED
    out = []
    for entry in entries:
        engine = entry["engine"]
        key = json.dumps(entry, sort_keys=True)
        if key not in _CONTAINERS:
            _CONTAINERS[key] = containers(entry)
        for kind, container in _CONTAINERS[key]:
            for version in releases.get(engine, ()):
                for variant, c in variants(engine, container, version):
                    key = (json.dumps(c, sort_keys=True), version if not c.get("command") else "")
                    if key not in memo:
                        memo[key] = executed(c, version)
                    argv, why = memo[key]
                    entry_name = args = None
                    if argv is not None:
                        got, entry_name, args = engine_entry(argv)
                        if got != engine:
                            argv, why = None, f"starts {got or argv[0]}"
                    unset = runtime_dependence(c)
                    out.append(Case(entry_id=entry["id"], kind=kind, variant=variant, engine=engine, version=version,
                                    container=c, entry=entry_name, argv=args, skip=why, unset=unset,
                                    matching=entry.get("release") == version))
    return out


def shell_script(container):
    """The script a container's shell runs (after $(VAR) expansion), or None when it runs none."""
    env = pod_env(container)
    argv = [k8s_expand(str(t), env) for t in list(container.get("command") or ()) + list(container.get("args") or ())]
    if not argv or os.path.basename(argv[0]) not in SHELLS:
        return None
    split = shell_operands(argv)
    return split[0] if split else None


def shell_operands(argv):
    """(script, the operands after it: $0, $1, ...) of `sh [options] -c script ...`, as POSIX sh
    and bash read their options (`-c` anywhere in a cluster, `--` ends options, `-o`/`+o` take a
    name), or None without -c. The other options (-l, -e, -x, ...) are not passed on: a login
    shell's profile is the image's, not this machine's."""
    c_flag = False
    i = 1
    while i < len(argv):
        t = argv[i]
        if t == "--" or t == "-":
            i += 1
            break
        if len(t) > 1 and t[0] in "-+" and not t.startswith("--"):
            c_flag = c_flag or "c" in t[1:]
            i += 2 if t[1:] in ("o",) else 1
            continue
        if t.startswith("--"):   # bash long options (--login, --norc, ...)
            i += 1
            continue
        break
    if not c_flag or i >= len(argv):
        return None
    return argv[i], argv[i + 1:]


def runtime_dependence(container):
    """What a shell row reads that the Pod does not set: unset variables, command substitutions."""
    script = shell_script(container)
    if script is None:
        return []
    out = shell_unset(script, pod_env(container))
    return out + (["$(...)"] if _SUBST.search(script) else [])
