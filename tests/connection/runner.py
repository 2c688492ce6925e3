"""Run parity cases through the real kubectl and through the plugin, and compare what reached the
recording servers.

For each case both tools run in the case's folder with a fresh HOME, stdin at EOF, and only the
case's environment (plus PATH). What the recorders saw is reduced to an Observation: listeners
reached (and over which address family), TLS (SNI, handshake completed, client certificate CN),
proxy hops (kind, target, Proxy-Authorization or socks5 credentials), and the distinct requests
(Host, path prefix, Authorization bytes, Impersonate-* headers as a multiset with names
lower-cased). Sets, not sequences: kubectl makes more requests than the plugin (discovery) and
retries failed handshakes. If kubectl sent nothing (no request, no proxy hop: see `sent`), the
plugin must not either, and must have refused as the project requires: exit 2, exactly one stderr
line, starting `error:`; if both then tried to connect, where and with which TLS must agree too.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

from tests.connection.recorder import PKI, Recorder, path_prefix

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = float(os.environ.get("KVCACHE_PARITY_TIMEOUT", "15"))
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class Unavailable(RuntimeError):
    """The real kubectl or the plugin cannot be had."""


def find_kubectl() -> str:
    """kubectl of the pinned release (hack/kube/KUBE_VERSION, checked): $KUBEBUILDER_ASSETS/kubectl,
    else the folder tests/cluster/harness.find_binaries gives (scripts/test-binaries' cache).
    Never /usr/bin/kubectl."""
    path = _kubectl_path()
    with open(os.path.join(HERE, "..", "..", "hack", "kube", "KUBE_VERSION")) as f:
        pinned = f.read().strip()
    try:
        out = subprocess.run([path, "version", "--client", "-o", "json"], capture_output=True, text=True,
                             timeout=30, env={"HOME": tempfile.gettempdir(), "PATH": SYSTEM_PATH}).stdout
        got = json.loads(out)["clientVersion"]["gitVersion"]
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{path} does not say its version: {exc}") from None
    if got != pinned:
        raise Unavailable(f"{path} is kubectl {got}, not the pinned {pinned}")
    return path


def _kubectl_path() -> str:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and os.access(os.path.join(assets, "kubectl"), os.X_OK):
        return os.path.join(os.path.abspath(assets), "kubectl")
    harness = sys.modules.get("kvcache_test_harness")
    if harness is None:
        spec = importlib.util.spec_from_file_location(
            "kvcache_test_harness", os.path.join(HERE, "..", "cluster", "harness.py"))
        harness = importlib.util.module_from_spec(spec)
        sys.modules["kvcache_test_harness"] = harness
        spec.loader.exec_module(harness)
    try:
        return os.path.join(harness.find_binaries(), "kubectl")
    except harness.BinariesUnavailable as exc:
        raise Unavailable(str(exc)) from None


def find_plugin() -> str:
    """The installed plugin's console script: $KVCACHE_PLUGIN, else the one next to this Python."""
    path = os.environ.get("KVCACHE_PLUGIN") or os.path.join(os.path.dirname(sys.executable), "kubectl-kvcache")
    if not os.access(path, os.X_OK):
        raise Unavailable(f"no kubectl-kvcache console script at {path} (pip install -e . in this venv)")
    return path


# ---------------------------------------------------------------------------------------------
# placeholders

def placeholders(rec: Recorder, pki: PKI, folder: str) -> dict[str, str]:
    ca, ca2 = pki.pem("ca.crt").decode(), pki.pem("ca2.crt").decode()
    b64 = lambda name: base64.b64encode(pki.pem(name)).decode()  # noqa: E731
    out = {"@PLAIN@": rec.ports["plain"], "@TLS@": rec.ports["tls"], "@TLS2@": rec.ports["tls2"],
           "@HTTP_PROXY@": rec.ports["http-proxy"], "@HTTPS_PROXY@": rec.ports["https-proxy"],
           "@SOCKS@": rec.ports["socks5"], "@CA@": pki.path("ca.crt"), "@CA2@": pki.path("ca2.crt"),
           "@CA_DATA@": b64("ca.crt"), "@CA2_DATA@": b64("ca2.crt"), "@CA_DATA_NOPAD@": b64("ca.crt").rstrip("="),
           "@CA_DATA_URLSAFE@": base64.urlsafe_b64encode(pki.pem("ca.crt")).decode(),
           "@CA_PEM@": ca, "@CA2_PEM@": ca2, "@DIR@": folder}
    for who in ("alice", "bob"):
        for part, ext in (("CRT", "crt"), ("KEY", "key")):
            out[f"@{who.upper()}_{part}@"] = pki.path(f"{who}.{ext}")
            out[f"@{who.upper()}_{part}_DATA@"] = b64(f"{who}.{ext}")
            out[f"@{who.upper()}_{part}_PEM@"] = pki.pem(f"{who}.{ext}").decode()
    return {k: str(v) for k, v in out.items()}


def substitute(text, values):
    """Placeholders replaced; @CA_PEM_INDENTED@ becomes the PEM with every line indented like the
    line it is on (for block scalars)."""
    if isinstance(text, bytes):
        return substitute(text.decode("utf-8", "surrogateescape"), values).encode("utf-8", "surrogateescape")

    def indented(m):
        return ("\n" + m.group(1)).join([m.group(1) + line if i == 0 else line for i, line in
                                          enumerate(values["@CA_PEM@"].strip().split("\n"))])
    text = re.sub(r"^([ \t]*)@CA_PEM_INDENTED@", indented, text, flags=re.M)
    return re.sub(r"@[A-Z0-9_]+@", lambda m: values.get(m.group(0), m.group(0)), text)


# ---------------------------------------------------------------------------------------------
# observations

def show(value) -> str:
    """Bytes and strings for a reader: printable ASCII as is, anything else escaped."""
    if value is None:
        return "-"
    if isinstance(value, bytes):
        if all(0x20 <= b < 0x7F for b in value):
            return value.decode()
        return "b" + repr(value)[1:]
    return str(value)


def observe(events: list[dict]) -> dict[str, tuple]:
    reached, tls, proxies, requests = set(), set(), set(), set()
    finished = {(e["server"], show(e["sni"])) for e in events
                if e["kind"] == "conn" and e["tls"] and e["handshake"]}
    for e in events:
        kind = e["kind"]
        if kind == "conn":
            reached.add(f"{e['server']} over IPv{e['family']}")
            if e["tls"] and (e["handshake"] or (e["server"], show(e["sni"])) not in finished):
                tls.add(f"{e['server']}: SNI {show(e['sni'])}, handshake "
                        f"{'completed' if e['handshake'] else 'NOT completed'}, client certificate "
                        f"{show(e['client_cn'])}")
        elif kind == "garbage":
            reached.add(f"{e['server']}: not HTTP (first bytes {e['first']}: a TLS ClientHello?)")
        elif kind == "proxy":
            if e["proxy"] == "socks5":
                proxies.add(f"socks5 to {e['target']} (address type {e.get('atyp')}), username "
                            f"{show(e['username'])}, password {show(e['password'])}")
            else:
                proxies.add(f"{e['proxy']} {e['method']} {e['target']}, Proxy-Authorization "
                            f"{show(e['proxy_authorization'])}")
        elif kind == "request":
            imp = sorted((n.decode("latin-1").lower(), v) for n, v in e["impersonate"])
            requests.add(f"{e['server']}: Host {show(e['host'])}, path prefix {path_prefix(e['target'])!r}, "
                         f"Authorization {show(e['authorization'])}, "
                         f"Impersonate {[(n, show(v)) for n, v in imp] if imp else '-'}")
    # A handshake left unfinished beside a finished one of the same server and SNI is a connection
    # the process abandoned (the plugin reads lists concurrently; Go's transport races a second
    # dial through a proxy and drops the loser), not a verification outcome: the finished one says
    # what the client trusts. Its client certificate is not compared: a TLS 1.3 client sends it
    # only after verifying the server, so an abandoned handshake shows none (CI, case 714 of seed 20).
    return {"reached": tuple(sorted(reached)), "tls": tuple(sorted(tls)), "proxy": tuple(sorted(proxies)),
            "requests": tuple(sorted(requests))}


def empty(obs) -> bool:
    return not any(obs.values())


def sent(obs) -> bool:
    """Whether a request or a proxy hop reached a recorder. A TCP connection or a TLS handshake
    that failed carries no credentials (TLS 1.3 clients send their certificate only after
    verifying the server's), so it alone is not `sending`: kubectl that fails its handshake on a
    key that does not match the certificate and the plugin that refuses the pair before
    connecting have both refused."""
    return bool(obs["requests"] or obs["proxy"])


# ---------------------------------------------------------------------------------------------
# running

class Worker:
    """One recorder set; runs cases one after another."""

    def __init__(self, pki: PKI, kubectl: str, plugin: str, base: str):
        self.pki, self.kubectl, self.plugin = pki, kubectl, plugin
        self.rec = Recorder(pki)
        self.base = base

    def close(self):
        self.rec.close()

    def run(self, case) -> dict:
        folder = tempfile.mkdtemp(prefix=f"case{case['id']}-", dir=self.base)
        try:
            return self._run(case, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _run(self, case, folder):
        values = placeholders(self.rec, self.pki, folder)
        for rel, data in case["files"].items():
            path = os.path.join(folder, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(substitute(data, values))
        for rel in case.get("executable", ()):
            os.chmod(os.path.join(folder, rel), 0o755)
        env = {k: substitute(v, values) for k, v in case["env"].items()}
        argv = [substitute(a, values) for a in case["argv"]]
        pargv = [substitute(a, values) for a in case.get("plugin_argv") or case["argv"]]
        result = {"case": case, "env": env, "argv": argv, "plugin_argv": pargv}
        result["kubectl"] = self._tool([self.kubectl, "get", "pods", "-A", *argv], env, folder, "home-kubectl")
        result["plugin"] = self._tool([self.plugin, "verify", "-A", *pargv], env, folder, "home-plugin")
        result["differences"] = compare(result["kubectl"], result["plugin"])
        return result

    def _tool(self, cmd, env, folder, home):
        home = os.path.join(folder, ".parity", home)
        os.makedirs(home)
        full = {"HOME": home, "PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
        full.update(env)
        self.rec.take(settle=0.5)          # nothing left over from the previous run
        start = time.monotonic()
        try:
            p = subprocess.run(cmd, cwd=folder, env=full, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=TIMEOUT)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, err = "timeout", exc.stdout or b"", exc.stderr or b""
        seconds = time.monotonic() - start
        events = self.rec.take()
        return {"rc": rc, "stdout": out.decode("utf-8", "replace"), "stderr": err.decode("utf-8", "replace"),
                "seconds": seconds, "events": events, "obs": observe(events)}


def refusal_problem(run) -> str | None:
    """Why the plugin's refusal is not one `error:` line with exit 2, or None. A usage error may
    add the pointer kubectl adds to its own (`See 'kubectl get --help' for usage.`), nothing else."""
    lines = run["stderr"].splitlines()
    if run["rc"] != 2:
        return f"exit {run['rc']}, not 2"
    if len(lines) == 2 and re.fullmatch(r"See '[^']+ --help' for usage\.", lines[1]):
        lines = lines[:1]
    if len(lines) != 1 or not lines[0].startswith("error:"):
        return f"stderr has {len(lines)} lines, not one `error:` line"
    return None


def compare(k, p) -> list[str]:
    """The differences between kubectl's run and the plugin's, in words."""
    diffs = []
    if k["rc"] == "timeout":
        diffs.append("kubectl timed out (a problem of the case or the recorder, not the plugin)")
        return diffs
    if p["rc"] == "timeout":
        diffs.append(f"the plugin did not finish within {TIMEOUT:.0f}s")
    if "Traceback (most recent call last)" in p["stderr"]:
        diffs.append("the plugin printed a traceback")
    if not sent(k["obs"]):
        if sent(p["obs"]):
            diffs.append("kubectl refused without sending anything, the plugin sent")
            return diffs
        if p["rc"] != "timeout":
            problem = refusal_problem(p)
            if problem:
                diffs.append(f"both sent nothing, but the plugin's refusal is malformed: {problem}")
        if empty(k["obs"]) or empty(p["obs"]):
            return diffs                # one refused before connecting: nothing more to compare
    elif not sent(p["obs"]):
        diffs.append("kubectl sent, the plugin refused without sending anything")
        return diffs
    for aspect in k["obs"]:
        if k["obs"][aspect] != p["obs"][aspect]:
            diffs.append(f"{aspect} differ")
    return diffs


def run_cases(cases, kubectl, plugin, workers=2, progress=None) -> list[dict]:
    """All cases over `workers` threads, each with its own recorder set (cases sequential within
    a worker); results in case order."""
    base = tempfile.mkdtemp(prefix="kvcache-parity-")
    pki = PKI(os.path.join(base, "pki"))
    results: list = [None] * len(cases)
    index = iter(range(len(cases)))
    lock = threading.Lock()
    errors = []

    def work():
        w = Worker(pki, kubectl, plugin, base)
        try:
            while True:
                with lock:
                    i = next(index, None)
                if i is None:
                    return
                results[i] = w.run(cases[i])
                if progress:
                    progress(results[i])
        except BaseException as exc:       # noqa: BLE001 - reported after join
            errors.append(exc)
        finally:
            w.close()

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shutil.rmtree(base, ignore_errors=True)
    if errors:
        raise errors[0]
    return results


# ---------------------------------------------------------------------------------------------
# reports

def _indent(text, pad="      "):
    return "\n".join(pad + line for line in text.splitlines())


def describe_case(result) -> str:
    case = result["case"]
    out = [f"case {case['id']} [{case['category']}] {case['title']}"]
    for rel, data in case["files"].items():
        shown = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        flags = []
        if isinstance(data, bytes) and data.startswith(b"\xef\xbb\xbf"):
            flags.append("BOM")
        if isinstance(data, bytes) and b"\r\n" in data:
            flags.append("CRLF")
        out.append(f"  file {rel}{' (' + ', '.join(flags) + ')' if flags else ''}:")
        out.append(_indent(shown.replace("\r", "").lstrip("\ufeff").rstrip("\n") or "<empty>"))
    if case["env"]:
        out.append(f"  env: {case['env']}")
    out.append(f"  kubectl get pods -A {' '.join(map(_quote, case['argv']))}")
    out.append(f"  kubectl-kvcache verify -A {' '.join(map(_quote, case.get('plugin_argv') or case['argv']))}")
    return "\n".join(out)


def _quote(arg):
    return arg if re.fullmatch(r"[A-Za-z0-9@%+=:,./_-]+", arg) else repr(arg)


def describe_run(name, run) -> str:
    out = [f"  {name}: exit {run['rc']} in {run['seconds']:.2f}s"]
    obs = run["obs"]
    if empty(obs):
        out.append("    sent nothing")
    for aspect, items in obs.items():
        for item in items:
            out.append(f"    {aspect}: {item}")
    err = run["stderr"].strip().splitlines()
    if err:
        out.append("    stderr: " + (err[-1][:300] if len(err) == 1 else f"({len(err)} lines, last) " + err[-1][:300]))
    return "\n".join(out)


def describe(result, both=True) -> str:
    parts = [describe_case(result)]
    if result["differences"]:
        parts.append("  DIFFERENCES: " + "; ".join(result["differences"]))
        k, p = result["kubectl"]["obs"], result["plugin"]["obs"]
        if not empty(k) and not empty(p):
            for aspect in k:
                for who, mine, theirs in (("kubectl only", k, p), ("plugin only ", p, k)):
                    for item in sorted(set(mine[aspect]) - set(theirs[aspect])):
                        parts.append(f"    {who} {aspect}: {item}")
    if both or result["differences"]:
        parts.append(describe_run("kubectl", result["kubectl"]))
        parts.append(describe_run("plugin ", result["plugin"]))
    return "\n".join(parts)


LEGEND = ("Placeholders in the cases: @PLAIN@ @TLS@ @TLS2@ ports of the plain API server, of the TLS one "
          "with a certificate by CA 1 (SANs 127.0.0.1, ::1, localhost, kube.proxied.test, "
          "only-by-tls-server-name.test) and of the one by CA 2; @HTTP_PROXY@ @HTTPS_PROXY@ @SOCKS@ proxy ports; "
          "@CA@ @CA2@ CA files, @..._DATA@ base64, @ALICE_CRT@/@BOB_CRT@ client certificates (CN alice/bob); "
          "@DIR@ the case's folder (the working directory). kube.proxied.test resolves nowhere: only a proxy "
          "reaches it.")


def tally(results) -> str:
    """Cases per category: how many kubectl answered by sending, by refusing, and differences."""
    rows = {}
    for r in results:
        c = r["case"]["category"]
        row = rows.setdefault(c, Counter())
        row["cases"] += 1
        row["kubectl sent" if sent(r["kubectl"]["obs"]) else "kubectl refused"] += 1
        row["differences"] += bool(r["differences"])
    total = sum(rows.values(), Counter())
    lines = [f"{'category':28} {'cases':>6} {'sent':>6} {'refused':>8} {'differ':>7}"]
    for name, row in sorted(rows.items()) + [("TOTAL", total)]:
        lines.append(f"{name:28} {row['cases']:6} {row['kubectl sent']:6} {row['kubectl refused']:8} "
                     f"{row['differences']:7}")
    return "\n".join(lines)


def _last_line(text):
    lines = text.strip().splitlines()
    line = lines[-1] if lines else ""
    line = re.sub(r"/tmp/kvcache-parity-[^/]+/(case\d+-[^/\"' ]+|pki)", "<DIR>", line)
    line = re.sub(r"E\d{4} [\d:.]+ +\d+ ", "", re.sub(r"(:|port )\d{4,5}\b", r"\1<PORT>", line))
    return re.sub(r"tok-[a-z0-9]{8}", "tok-<random>", line)[:200]


def classes(results) -> list[tuple[str, list[dict]]]:
    """Differences grouped by what differs and by the refusing side's error line (or, when both
    sent, by category), biggest group first: one class is usually one thing to fix."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        if not r["differences"]:
            continue
        what = "; ".join(r["differences"])
        if what.startswith("kubectl refused"):
            key = f"{what} | kubectl: {_last_line(r['kubectl']['stderr'] or r['kubectl']['stdout'])}"
        elif what.startswith(("kubectl sent", "both sent nothing")):
            key = f"{what} | plugin: {_last_line(r['plugin']['stderr'])}"
        else:
            key = f"{what} | {r['case']['category']}"
        groups.setdefault(key, []).append(r)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def summary(results) -> str:
    return "\n".join(f"{len(rs):4}  {key}  (cases {', '.join(str(r['case']['id']) for r in rs[:6])}"
                     f"{', ...' if len(rs) > 6 else ''})" for key, rs in classes(results))


def vacuous(results) -> list[dict]:
    """Cases where kubectl exited 0 having sent nothing: they prove nothing."""
    return [r for r in results if not sent(r["kubectl"]["obs"]) and r["kubectl"]["rc"] == 0]
