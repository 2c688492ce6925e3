#!/usr/bin/env python3
"""Benchmark kubectl-kvcache against the guide's own kubectl commands on a real API server.

    bench/run.py --sizes 1000,10000 --runs 5
    bench/run.py --sizes 1000 --runs 3 --no-binary              # quicker: wheel install only
    bench/run.py --kubeconfig ~/.kube/bench --sizes 1000         # an existing, empty-ish cluster
    bench/run.py ... --markdown bench/results.md                 # also write the table as Markdown
    bench/run.py --kubeconfig K --sizes 100 --runs 1 --no-binary --plugin-bin .venv/bin   # smallest (a test)

Without --kubeconfig it starts etcd + kube-apiserver through tests/cluster/harness.py (binaries
from scripts/test-binaries), seeds it with bench/seed.py in ascending sizes (each size tops up the
previous one), measures, prints the table and stops the server. With --kubeconfig it seeds
namespaces labelled kvcache-bench=true into that cluster and deletes them at the end (--keep
keeps them, and keeps a started server running: its admin kubeconfig is printed).

What is measured, per size, each command `--runs` times after one warm-up run (runs of the
commands are interleaved), in a fresh process each time:
  verify (wheel)    kubectl kvcache verify -A -o json, the plugin installed from a wheel into a venv
  verify (binary)   the same through the PyInstaller binary (scripts/build-binary, --onedir)
  check (wheel)     kubectl kvcache check -A (skipped, with the reason, when it does not run)
  verify -n (wheel) kubectl kvcache verify -n bench-0000 -o json: one namespace of
                    --pods-per-namespace engine Pods (where most users are), also (binary) and (REV)
  kubectl pods -n   the guide's Verify step in that namespace (the baseline of the -n rows)
  kubectl pods      the guide's Verify step across all namespaces:
                    kubectl get pods -A -l app.kubernetes.io/name=model-deployment -o jsonpath=... | grep -o ...
  kubectl md | jq   the guide's roles query: kubectl get modeldeployments -A -o json | jq -r ...
Wall time is from the first process start to the last exit; CPU s is user + system time of the
processes (summed over a pipeline): on a machine shared with other work it moves much less than
the wall time. Peak RSS is each process's own, measured through GNU time (/usr/bin/time, which
forks the command from its own small process: a child forked from the bench process, which grows
with the seeded cluster, reported the bench's RSS as its own, so the earlier RSS figures of the
plugin at 10,000 Pods were inflated by the bench itself), summed over the processes of a pipeline (an upper bound of the pipeline's
peak). `kubectl kvcache ...` execs the plugin in kubectl's process, so its RSS is the larger of
kubectl's own before the exec and the plugin's; the plugin alone is also reported (run directly).
API requests are counted in one extra run: the plugin's KVCACHE_TRACE=1 lines, kubectl's -v=6
response lines; in brackets the API server's apiserver_request_total delta over that run (GET
/metrics as admin), which counts resource requests only (not discovery under /apis).
The seeded cluster: see bench/seed.py. kubectl's discovery cache (KUBECACHEDIR) is warm.
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import seed as seeding  # noqa: E402

POD_JSONPATH = '{range .items[*]}{.metadata.name}{"\\t"}{.spec.containers[0].command}{"\\n"}{end}'
GREP_DTYPE = '--kv-cache-dtype","[^"]*'
JQ_ROLES = r'''.items[]
  | select(.spec.kvCache != null) | . as $md | .spec.roles[]
  | select((.command // []) == [] and ((.extraArgs // []) | any(test("^--kv[-_]cache[-_]dtype"))))
  | "\($md.metadata.namespace)/\($md.metadata.name) role \(.name)"'''
PY_JQ_STANDIN = r'''
import json, re, sys
for md in json.load(sys.stdin)["items"]:
    if md["spec"].get("kvCache") is None:
        continue
    for r in md["spec"].get("roles") or []:
        if not (r.get("command") or []) and any(re.match("^--kv[-_]cache[-_]dtype", a) for a in r.get("extraArgs") or []):
            print(f'{md["metadata"]["namespace"]}/{md["metadata"]["name"]} role {r["name"]}')
'''


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _harness():
    import importlib.util

    path = os.path.join(ROOT, "tests", "cluster", "harness.py")
    spec = importlib.util.spec_from_file_location("kvcache_test_harness", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["kvcache_test_harness"] = mod
    spec.loader.exec_module(mod)
    return mod


# -- installing the plugin -------------------------------------------------------------------

def _copy_tree(dest, source=ROOT):
    """The checkout (uncommitted changes included) without VCS, build and cache folders: an
    in-tree pip build would leave build/ and *.egg-info where others work."""
    skip = {".git", "build", "dist", ".venv", ".cache", ".pytest_cache", ".hypothesis", "__pycache__"}
    shutil.copytree(source, dest, ignore=lambda d, names: [n for n in names if n in skip or n.endswith(".egg-info")])


def _source_tree(workdir, rev):
    """A folder holding the tree of git revision `rev` (for --compare)."""
    dest = os.path.join(workdir, "compare-src")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True, stdout=subprocess.PIPE).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return dest


def wheel_venv(workdir, python=sys.executable, reuse=True, source=ROOT, name="wheel-venv"):
    """A venv with the plugin installed from a freshly built wheel; returns its bin folder."""
    venv = os.path.join(workdir, name)
    py = os.path.join(venv, "bin", "python")
    if not (reuse and os.path.exists(py)):
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade", "pip"],
                       check=True)
    src = os.path.join(workdir, "src")
    wheels = os.path.join(workdir, "wheels")
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(wheels, ignore_errors=True)
    _copy_tree(src, source)
    subprocess.run([py, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "-w", wheels, src],
                   check=True, stdout=subprocess.DEVNULL)
    wheel = [os.path.join(wheels, n) for n in os.listdir(wheels) if n.endswith(".whl")][0]
    subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--force-reinstall",
                    "--no-deps", wheel], check=True)
    # byte-compile now, as pip does at install time: no run pays for it
    log(f"wheel {os.path.basename(wheel)} from {source} installed in {venv}")
    return os.path.join(venv, "bin")


def binary_dir(workdir, given=None):
    """A folder holding the PyInstaller `kubectl-kvcache`: from --binary (an archive of
    scripts/build-binary, or the executable), else built now with scripts/build-binary."""
    if given and os.path.isfile(given) and not given.endswith((".tar.gz", ".tgz")):
        return os.path.dirname(os.path.abspath(given))
    archive = given
    if not archive:
        out = os.path.join(workdir, "binary-dist")
        env = dict(os.environ, KVCACHE_BUILD_VENV=os.path.join(workdir, "build-venv"))
        log("building the PyInstaller binary (scripts/build-binary --onedir) ...")
        p = subprocess.run([os.path.join(ROOT, "scripts", "build-binary"), "--out", out], env=env,
                           stdout=subprocess.PIPE, text=True)
        if p.returncode:
            raise SystemExit("scripts/build-binary failed")
        archive = p.stdout.split()[0]
    dest = os.path.join(workdir, "binary")
    shutil.rmtree(dest, ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest)
    for candidate in (os.path.join(dest, "kubectl-kvcache"), dest):
        if os.path.isfile(os.path.join(candidate, "kubectl-kvcache")):
            return candidate
    raise SystemExit(f"{archive}: no kubectl-kvcache executable inside")


# -- running and measuring -----------------------------------------------------------------

class Command:
    def __init__(self, name, stages, path_dirs, kind, count_items=None, trace="plugin", direct=None):
        self.name = name
        self.stages = stages          # list of argv; consecutive stages are piped
        self.path_dirs = path_dirs    # PATH entries before the system's
        self.kind = kind              # plugin | kubectl
        self.count_items = count_items
        self.trace = trace
        self.direct = direct          # argv of the plugin run without kubectl (RSS of the plugin alone)


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None   # GNU time: a child's own peak RSS


def run_once(cmd, env, out_path, extra_env=None, trace=False, stages=None):
    """(wall seconds, [maxrss KB per stage], [exit codes], stderr text); the CPU seconds (user +
    system, summed over the stages) are in run_once.cpu."""
    stages = [list(s) for s in (stages or cmd.stages)]
    env = dict(env, **(extra_env or {}))
    env["PATH"] = os.pathsep.join(cmd.path_dirs + [env["PATH"]])
    if trace and cmd.kind == "kubectl":
        stages[0] = stages[0][:1] + ["-v=6"] + stages[0][1:]
    err_path = out_path + ".err"
    procs = []
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        prev = subprocess.DEVNULL
        for i, argv in enumerate(stages):
            last = i == len(stages) - 1
            if TIME:
                argv = [TIME, "-f", "%M %U %S", "-o", f"{out_path}.rusage{i}", *argv]
            p = subprocess.Popen(argv, stdin=prev, stdout=out if last else subprocess.PIPE,
                                 stderr=err if i == 0 else subprocess.DEVNULL, env=env)
            if prev not in (subprocess.DEVNULL, None):
                prev.close()
            prev = p.stdout
            procs.append(p)
        rss, codes, cpu = [], [], 0.0
        for i, p in enumerate(procs):
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            codes.append(p.returncode)
            if TIME:
                # GNU time forks the command from its own small process: a child forked from this
                # (large) bench process would report this process's RSS as its own peak
                with open(f"{out_path}.rusage{i}") as f:
                    fields = f.read().split()[-3:]
                rss.append(int(fields[0]))
                cpu += float(fields[1]) + float(fields[2])
            else:
                rss.append(usage.ru_maxrss)
                cpu += usage.ru_utime + usage.ru_stime
        run_once.cpu = cpu
        wall = time.perf_counter() - t0
    with open(err_path, encoding="utf-8", errors="replace") as f:
        stderr = f.read()
    return wall, rss, codes, stderr


def request_total(api):
    """Sum of apiserver_request_total over all label sets (resource requests of every verb)."""
    status, raw = api.raw("GET", "/metrics")
    if status != 200:
        return None
    total = 0.0
    for line in raw.decode().splitlines():
        if line.startswith("apiserver_request_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


_KUBECTL_RESPONSE = re.compile(r'"Response" verb="\w+" url="[^"]+" status="\d{3}|'
                               r'\b(GET|POST|PUT|PATCH|DELETE) https?://\S+ \d{3} ')


def count_trace(cmd, stderr):
    if cmd.trace == "plugin":
        return sum(1 for line in stderr.splitlines() if line.startswith("trace: "))
    return sum(1 for line in stderr.splitlines() if _KUBECTL_RESPONSE.search(line))


def measure(cmd, env, runs_dir, api):
    """A warm-up run and one traced run (requests); the caller does the timed runs."""
    out = os.path.join(runs_dir, re.sub(r"\W+", "_", cmd.name))
    wall, rss, codes, err = run_once(cmd, env, out)
    if any(c not in (0, 1) for c in codes):
        return {"error": f"exit {codes}: {err.strip().splitlines()[-1] if err.strip() else ''}"}
    before = request_total(api)
    _, _, _, traced = run_once(cmd, env, out + ".trace", {"KVCACHE_TRACE": "1"}, trace=True)
    time.sleep(0.5)   # let the server's counters settle
    after = request_total(api)
    try:
        items = cmd.count_items(out) if cmd.count_items else None
    except (ValueError, KeyError) as exc:
        return {"error": f"unexpected output ({exc.__class__.__name__}): {err.strip()[-200:]}"}
    result = {"wall": [], "rss": [], "cpu": [], "codes": codes, "trace_requests": count_trace(cmd, traced),
              "metric_requests": None if before is None else int(after - before),
              "items": items, "out_bytes": os.path.getsize(out)}
    if cmd.direct:
        direct = Command(cmd.name + " direct", [cmd.direct], cmd.path_dirs, cmd.kind)
        result["direct_rss"] = run_once(direct, env, out + ".direct")[1][0]
    if cmd.kind == "plugin":
        pages = [int(m) for m in re.findall(r"-> 200 \((\d+) bytes\)", traced)]
        result["bytes_read"] = sum(pages)
    return result


def count_verify_items(path):
    with open(path) as f:
        data = json.load(f)
    return len(data["items"])


def count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


# -- the table -------------------------------------------------------------------------------

def fmt_mb(kb):
    return f"{kb / 1024:.0f}"


def table_rows(results, baseline="kubectl pods"):
    """Rows of one namespace (names with ` -n`) are compared with `kubectl pods -n`, the others
    with `baseline` (all namespaces)."""
    rows = []
    for size, per in results:
        for name, r in per.items():
            base_name = baseline + " -n" if " -n" in name and baseline + " -n" in per else baseline
            base = per.get(base_name)
            base_wall = statistics.median(base["wall"]) if base and base.get("wall") else None
            base_rss = sum(statistics.median(x) for x in zip(*base["rss"])) if base and base.get("rss") else None
            baseline_here = name == base_name
            if "error" in r:
                rows.append([f"{size:,}", name, "-", "-", "-", "-", "-", "-", "-", r["error"]])
                continue
            base_cpu = statistics.median(base["cpu"]) if base and base.get("cpu") else None
            cpu = statistics.median(r["cpu"]) if r.get("cpu") else None
            med = statistics.median(r["wall"])
            rss = sum(statistics.median(x) for x in zip(*r["rss"]))
            req = str(r["trace_requests"])
            if r["metric_requests"] is not None:
                req += f" ({r['metric_requests']})"
            ratio = f"{med / base_wall:.2f}x" if base_wall and not baseline_here else ""
            rss_ratio = f"{rss / base_rss:.2f}x" if base_rss and not baseline_here else ""
            rss_text = fmt_mb(rss) + (f" ({fmt_mb(r['direct_rss'])} alone)" if r.get("direct_rss") else "")
            cpu_text = "" if cpu is None else f"{cpu:.2f}" + (
                f" ({cpu / base_cpu:.2f}x)" if base_cpu and not baseline_here else "")
            rows.append([f"{size:,}", name, f"{med:.2f}", f"{min(r['wall']):.2f}-{max(r['wall']):.2f}", rss_text,
                         req, ratio, rss_ratio, cpu_text, str(r["items"]) if r["items"] is not None else ""])
    return rows


HEADERS = ["Pods", "command", "median s", "range s", "peak RSS MB", "API requests (server-counted)",
           "wall vs kubectl pods (-n)", "RSS vs kubectl pods (-n)", "CPU s (vs kubectl pods (-n))",
           "output lines/items"]


def markdown_table(rows, headers=HEADERS):
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def text_table(rows, headers=HEADERS):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def machine(env, kubectl, wheel_bin, server_version):
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    py = subprocess.run([os.path.join(wheel_bin, "python"), "--version"], capture_output=True, text=True).stdout.strip()
    kv = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, env=env)
    try:
        kv = json.loads(kv.stdout)["clientVersion"]["gitVersion"]
    except (ValueError, KeyError):
        kv = "?"
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    jq = shutil.which("jq")
    jqv = subprocess.run([jq, "--version"], capture_output=True, text=True).stdout.strip() if jq else "missing"
    return {"nproc": os.cpu_count(), "cpu": cpu, "memory": mem, "kernel": platform.release(),
            "python": py, "kubectl": kv, "server": server_version, "jq": jqv,
            "commit": commit + (" (+ uncommitted changes)" if dirty else "")}


def machine_text(m):
    return (f"Machine: {m['nproc']} cores ({m['cpu']}), {m['memory']} memory, Linux {m['kernel']}; "
            f"{m['python']} (plugin venv); kubectl {m['kubectl']}; kube-apiserver {m['server']} + etcd on "
            f"the same machine; {m['jq']}; kubeconfig {m['kubeconfig']}; plugin at commit {m['commit']}.")


def yaml_kubeconfig(path, workdir):
    """The harness's kubeconfig as the YAML kubectl writes (block style, indentless lists): what
    users' kubeconfigs are, and what every command of the bench reads."""
    import yaml

    with open(path) as f:
        config = json.load(f)
    out = os.path.join(workdir, "admin.kubeconfig.yaml")
    text = yaml.safe_dump(config, default_flow_style=False, sort_keys=True, width=1 << 20)
    with open(out, "w") as f:
        f.write(text)
    os.chmod(out, 0o600)
    return out


# -- main ------------------------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000", help="comma-separated Pod counts, ascending (default 1000,10000)")
    p.add_argument("--runs", type=int, default=5, help="timed runs per command and size (default 5)")
    p.add_argument("--kubeconfig", help="use this cluster (admin) instead of starting one")
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "kvcache-bench"),
                   help="venvs, binary, outputs (default /tmp/kvcache-bench; venvs are reused)")
    p.add_argument("--binary", help="a scripts/build-binary archive or the kubectl-kvcache executable "
                                    "(default: build one now)")
    p.add_argument("--no-binary", action="store_true", help="skip the PyInstaller binary")
    p.add_argument("--plugin-bin", metavar="DIR",
                   help="a bin folder where kubectl-kvcache is already installed (e.g. a checkout's .venv/bin) "
                        "instead of a wheel built now: the rows named '(wheel)' then time that install")
    p.add_argument("--only", help="comma-separated command names to run (e.g. 'verify (wheel),kubectl pods')")
    p.add_argument("--compare", metavar="REV",
                   help="also time verify and check of this git revision (a wheel built from it), in the same "
                        "interleaved runs: rows '... (REV)'")
    p.add_argument("--chunk-sizes", default="",
                   help="also run verify (wheel) with each of these comma-separated --chunk-size values")
    p.add_argument("--pods-per-namespace", type=int, default=100)
    p.add_argument("--injected-ratio", type=float, default=0.1)
    p.add_argument("--json-kubeconfig", action="store_true",
                   help="give every command the harness's JSON kubeconfig instead of its YAML form (the form "
                        "kubectl, kind and cloud CLIs write, and so what users have)")
    p.add_argument("--keep", action="store_true", help="keep the seeded objects (and a started server) running")
    p.add_argument("--markdown", help="also write the table (with the machine line) to this Markdown file")
    p.add_argument("--json", help="also write every measurement to this JSON file")
    opts = p.parse_args(argv)
    sizes = [int(s.replace("_", "").replace(",", "")) for s in opts.sizes.split(",") if s.strip()]
    if sizes != sorted(sizes):
        p.error("--sizes must ascend (each size tops up the previous one)")
    os.makedirs(opts.workdir, exist_ok=True)
    runs_dir = os.path.join(opts.workdir, "runs")
    os.makedirs(runs_dir, exist_ok=True)

    wheel_bin = os.path.abspath(opts.plugin_bin) if opts.plugin_bin else wheel_venv(opts.workdir)
    bin_dir = None if opts.no_binary else binary_dir(opts.workdir, opts.binary)

    cluster = None
    kubeconfig_form = "as given (--kubeconfig)"
    if opts.kubeconfig:
        kubeconfig = os.path.abspath(os.path.expanduser(opts.kubeconfig))
        kubectl = shutil.which("kubectl") or sys.exit("no kubectl on PATH")
        cache = os.path.join(opts.workdir, "kube-cache")
    else:
        harness = _harness()
        cluster = harness.Cluster(harness.find_binaries(stream=True), name="kvcache-bench",
                                  detached=opts.keep)
        cluster.start()
        kubeconfig, kubectl, cache = cluster.admin_kubeconfig, cluster.kubectl_path, cluster.cache_dir
        kubeconfig_form = "JSON"
        if not opts.json_kubeconfig:
            kubeconfig, kubeconfig_form = yaml_kubeconfig(kubeconfig, opts.workdir), "YAML"
    kubectl_dir = os.path.dirname(kubectl)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVCACHE_", "PYTHON"))}
    env.update(KUBECONFIG=kubeconfig, KUBECACHEDIR=cache, PATH="/usr/local/bin:/usr/bin:/bin")
    api = seeding.Api.from_kubeconfig(kubeconfig)
    server_version = api.call("GET", "/version").get("gitVersion", "?")

    ns = seeding.NAMESPACE_FORMAT.format(0)      # one namespace of --pods-per-namespace engine Pods
    jq = shutil.which("jq")
    md_stage2 = [jq, "-r", JQ_ROLES] if jq else [os.path.join(wheel_bin, "python"), "-c", PY_JQ_STANDIN]
    plugin_dirs = [wheel_bin, kubectl_dir]
    verify_ns = ["verify", "-n", ns, "-o", "json"]
    commands = [
        Command("verify (wheel)", [["kubectl", "kvcache", "verify", "-A", "-o", "json"]], plugin_dirs, "plugin",
                count_verify_items, direct=["kubectl-kvcache", "verify", "-A", "-o", "json"]),
        Command("verify -n (wheel)", [["kubectl", "kvcache", *verify_ns]], plugin_dirs, "plugin",
                count_verify_items, direct=["kubectl-kvcache", *verify_ns]),
    ]
    if bin_dir:
        commands.append(Command("verify (binary)", [["kubectl", "kvcache", "verify", "-A", "-o", "json"]],
                                [bin_dir, kubectl_dir], "plugin", count_verify_items,
                                direct=["kubectl-kvcache", "verify", "-A", "-o", "json"]))
        commands.append(Command("verify -n (binary)", [["kubectl", "kvcache", *verify_ns]],
                                [bin_dir, kubectl_dir], "plugin", count_verify_items,
                                direct=["kubectl-kvcache", *verify_ns]))
    if opts.compare:
        old_bin = wheel_venv(opts.workdir, source=_source_tree(opts.workdir, opts.compare), name="compare-venv")
        for what, argv, count in (("verify", ["verify", "-A", "-o", "json"], count_verify_items),
                                  ("verify -n", verify_ns, count_verify_items),
                                  ("check", ["check", "-A"], count_lines)):
            commands.append(Command(f"{what} ({opts.compare})", [["kubectl", "kvcache", *argv]],
                                    [old_bin, kubectl_dir], "plugin", count, direct=["kubectl-kvcache", *argv]))
    for size in [c.strip() for c in opts.chunk_sizes.split(",") if c.strip()]:
        commands.append(Command(f"verify --chunk-size {size} (wheel)",
                                [["kubectl", "kvcache", "verify", "-A", "-o", "json", "--chunk-size", size]],
                                plugin_dirs, "plugin", count_verify_items,
                                direct=["kubectl-kvcache", "verify", "-A", "-o", "json", "--chunk-size", size]))
    commands += [
        Command("check (wheel)", [["kubectl", "kvcache", "check", "-A"]], plugin_dirs, "plugin", count_lines,
                direct=["kubectl-kvcache", "check", "-A"]),
        Command("kubectl pods", [["kubectl", "get", "pods", "-A", "-l", seeding.POD_SELECTOR, "-o",
                                  f"jsonpath={POD_JSONPATH}"], ["grep", "-o", "--", GREP_DTYPE]],
                [kubectl_dir], "kubectl", count_lines, trace="kubectl"),
        Command("kubectl pods -n", [["kubectl", "get", "pods", "-n", ns, "-l", seeding.POD_SELECTOR, "-o",
                                     f"jsonpath={POD_JSONPATH}"], ["grep", "-o", "--", GREP_DTYPE]],
                [kubectl_dir], "kubectl", count_lines, trace="kubectl"),
        Command("kubectl md | jq" if jq else "kubectl md | python (jq missing)",
                [["kubectl", "get", "modeldeployments", "-A", "-o", "json"], md_stage2],
                [kubectl_dir], "kubectl", count_lines, trace="kubectl"),
    ]
    if opts.only:
        wanted = {n.strip() for n in opts.only.split(",")}
        commands = [c for c in commands if c.name in wanted]

    results = []
    try:
        seeding.ensure_setting(api)
        # startup alone: `version` (the wheel target is < 0.3 s)
        startup = {}
        for name, dirs in (("wheel", plugin_dirs), ("binary", [bin_dir, kubectl_dir] if bin_dir else None)):
            if not dirs:
                continue
            for how, argv in (("kubectl kvcache version", ["kubectl", "kvcache", "version"]),
                              ("kubectl-kvcache version", ["kubectl-kvcache", "version"])):
                c = Command(how, [argv], dirs, "plugin")
                run_once(c, env, os.path.join(runs_dir, "version"))
                walls = [run_once(c, env, os.path.join(runs_dir, "version"))[0] for _ in range(max(opts.runs, 5))]
                startup[f"{how} ({name})"] = walls
        seeded = seeding.existing_pods(api)
        if seeded:
            log(f"{seeded:,} engine Pods are already there: topping up")
        for size in sizes:
            if size < seeded:
                log(f"skipping {size:,}: the cluster already holds {seeded:,}")
                continue
            seeding.seed(api, size, seeded, opts.pods_per_namespace, opts.injected_ratio,
                         log=lambda m: log(m))
            seeded = size
            per = {}
            for cmd in commands:
                log(f"{size:,} Pods: warm-up and request count of {cmd.name}")
                per[cmd.name] = measure(cmd, env, runs_dir, api)
            for run in range(opts.runs):
                for cmd in commands:
                    r = per[cmd.name]
                    if "error" in r:
                        continue
                    wall, rss, codes, err = run_once(cmd, env, os.path.join(runs_dir, "timed"))
                    if any(c not in (0, 1) for c in codes):
                        r.setdefault("failures", []).append(err[-300:])
                    r["wall"].append(wall)
                    r["rss"].append(rss)
                    r["cpu"].append(run_once.cpu)
                log(f"{size:,} Pods: run {run + 1}/{opts.runs} done")
            results.append((size, per))
            print(text_table(table_rows([(size, per)])), flush=True)
    finally:
        if cluster is not None and not opts.keep:
            cluster.stop()
        elif cluster is None and not opts.keep:
            log(f"deleting the bench namespaces from {kubeconfig}")
            seeding.delete_all(api, wait=False)
        elif opts.keep:
            log(f"kept: KUBECONFIG={kubeconfig}")

    info = machine(env, kubectl, wheel_bin, server_version)
    info["kubeconfig"] = kubeconfig_form
    rows = table_rows(results)
    print()
    print(text_table(rows))
    start_rows = [[k, f"{statistics.median(v):.3f}", f"{min(v):.3f}-{max(v):.3f}"] for k, v in startup.items()]
    print()
    print(text_table(start_rows, ["startup", "median s", "range s"]))
    print()
    print(machine_text(info))
    if opts.markdown:
        with open(opts.markdown, "w") as f:
            f.write(markdown_table(rows) + "\n\n" + markdown_table(start_rows, ["startup", "median s", "range s"])
                    + "\n\n" + machine_text(info) + "\n")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"machine": info, "startup": startup,
                       "results": [{"pods": s, "commands": per} for s, per in results]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
