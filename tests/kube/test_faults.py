"""Faults a real API server cannot be made to produce, on a small loopback fake server: 429/503
storms with Retry-After, a body that drips one byte at a time, continue tokens that repeat or
never end, a request that hangs until Ctrl-C. The plugin runs as it does for users (cli.main in
process, or a subprocess for signals) through a kubeconfig naming the fake server.

Also what every request carries (User-Agent, no credentials over plain http) and that a bad name
never reaches the server."""

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from fakeserver import DISCOVERY, EMPTY_LIST

from kubectl_kvcache import __version__, cli
from kubectl_kvcache.kube import client as kube
from kubectl_kvcache.operator.api import GROUP, VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

def _sigint_default():
    """The plugin under test gets Ctrl-C as a terminal would deliver it, even when this test
    run was started in the background (where the shell leaves SIGINT ignored, and a child that
    starts with SIGINT ignored keeps it ignored, as kubectl would)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(fake, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv) + ["--kubeconfig", fake.kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def read_all_found_nothing(code, err, out=None):
    """Every list answered, empty: the plugin did its job and says nothing was verified (issue 48:
    a scope with nothing in it is the nothing-found reason, exit 1, never a pass); `out`: the
    -o json document that says it instead of the verdict line."""
    assert code == 1 and "Traceback" not in err, err
    if out is not None:
        assert [r["code"] for r in json.loads(out)["verdict"]["reasons"]] == ["nothing-found"], out
        return
    last = err.rstrip().splitlines()[-1]
    assert last.startswith("verdict: FAILED (exit code 1): no ") and last.endswith("nothing was verified there"), err


def lists_empty(req):
    return 200, {}, EMPTY_LIST


# -- what every request carries ------------------------------------------------------------

def test_user_agent_names_the_plugin_and_its_version(fake_server):
    fake = fake_server(lists_empty)
    code, out, err = run(fake, "verify")
    read_all_found_nothing(code, err)
    agents = {r["headers"].get("User-Agent") for r in fake.requests}
    assert agents == {f"kubectl-kvcache/{__version__}"}


def test_no_credentials_over_plain_http_as_client_go(fake_server):
    """client-go reads a user's credentials only for a TLS server: the token never crosses a
    plain-http connection."""
    fake = fake_server(lists_empty)
    code, _, err = run(fake, "verify")
    read_all_found_nothing(code, err)
    assert all("Authorization" not in r["headers"] for r in fake.requests)


# -- names never become paths ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["../secrets/hf-token", "pod/log", "pod/proxy/metrics", "x?watch=1", "X",
                                  "a..b", "a-", "a" * 254, "pod%2Flog", "."])
def test_a_pod_name_that_kubernetes_would_refuse_is_refused_before_any_request(fake_server, name):
    fake = fake_server(lists_empty)
    code, out, err = run(fake, "verify", "-n", "llm-prod", name)
    assert code == 2
    assert "invalid Pod name" in one_error_line(err)
    assert fake.requests == []


@pytest.mark.parametrize("namespace", ["../kube-system", "llm.prod", "LLM", "a/b", "x?watch=1", "a" * 64])
def test_a_namespace_that_kubernetes_would_refuse_is_refused_before_any_request(fake_server, namespace):
    fake = fake_server(lists_empty)
    for argv in (("verify", "-n", namespace), ("check", "-n", namespace), ("bindings", "-n", namespace)):
        code, out, err = run(fake, *argv)
        assert code == 2
        assert "invalid namespace" in one_error_line(err)
    assert fake.requests == []


def test_a_valid_pod_name_is_one_quoted_path_segment(fake_server):
    def route(req):
        if req["path"] == "/api/v1/namespaces/llm-prod/pods/qwen.chat-0":
            return 404, {}, {"kind": "Status", "message": 'pods "qwen.chat-0" not found'}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify", "-n", "llm-prod", "qwen.chat-0")
    assert code == 1         # NotFound: the plugin did its job (kubectl get pod NAME: exit 1)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "not found" in errors[0] and "Traceback" not in err
    assert "/api/v1/namespaces/llm-prod/pods/qwen.chat-0" in fake.paths()


@pytest.mark.parametrize("path", ["/api/v1/namespaces/llm-prod/pods/../secrets/x", "/api/v1/namespaces/./pods",
                                  "/api/v1/namespaces/llm-prod/pods/%2E%2E"])
def test_the_client_refuses_dot_segments_whoever_builds_the_path(fake_server, path):
    fake = fake_server(lists_empty)
    from kubectl_kvcache.kube.connection import Connection
    client = kube.Client(Connection(kubeconfig=fake.kubeconfig))
    with pytest.raises(kube.PluginError, match="refusing a request path"):
        client.get(path)
    assert fake.requests == []


def test_the_client_quotes_every_segment(fake_server):
    fake = fake_server(lists_empty)
    from kubectl_kvcache.kube.connection import Connection
    client = kube.Client(Connection(kubeconfig=fake.kubeconfig))
    client.get(kube.object_path("", "v1", "pods", "ns", "a?watch=1#x/y"))
    assert fake.requests[-1]["raw_path"] == "/api/v1/namespaces/ns/pods/a%3Fwatch%3D1%23x%2Fy"
    assert fake.requests[-1]["query"] == {}


# -- 429 and 503 with Retry-After --------------------------------------------------------------

def test_429_and_503_are_retried_as_retry_after_says(fake_server):
    answers = {"n": 0}

    def route(req):
        if "/pods" in req["path"]:
            answers["n"] += 1
            if answers["n"] == 1:
                return 429, {"Retry-After": "1"}, {"kind": "Status", "reason": "TooManyRequests"}
            if answers["n"] == 2:
                return 503, {"Retry-After": "0"}, {"kind": "Status", "reason": "ServiceUnavailable"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    t0 = time.monotonic()
    code, out, err = run(fake, "verify")
    took = time.monotonic() - t0
    read_all_found_nothing(code, err)
    assert 1.0 <= took < 5, took       # waited the one second asked, not more
    pod_lists = [r for r in fake.requests if r["path"].endswith("/pods")]
    assert len(pod_lists) == 4         # two selectors, one of them answered twice with a retry


def test_a_storm_of_503_ends_after_a_bounded_number_of_retries_with_one_error_line(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            return 503, {"Retry-After": "0"}, {"kind": "Status", "reason": "ServiceUnavailable",
                                               "message": "the server is currently unable to handle the request"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    line = one_error_line(err)
    assert "503" in line and "modeldeployments" in line
    assert len([p for p in fake.paths() if p.endswith("/modeldeployments")]) == kube.MAX_RETRIES + 1


def test_retry_after_beyond_the_request_timeout_is_not_waited(fake_server):
    def route(req):
        if "/pods" in req["path"]:
            return 429, {"Retry-After": "30"}, {"kind": "Status", "reason": "TooManyRequests", "message": "slow down"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    t0 = time.monotonic()
    code, out, err = run(fake, "verify", "--request-timeout", "2s")
    assert time.monotonic() - t0 < 2
    assert code == 2
    assert "429" in one_error_line(err)


def test_the_total_wait_for_retries_is_bounded(fake_server, monkeypatch):
    slept = []
    monkeypatch.setattr(kube.time, "sleep", lambda s: slept.append(s))

    def route(req):
        if "/kvcachepoolbindings" in req["path"]:
            return 429, {"Retry-After": "10"}, {"kind": "Status", "reason": "TooManyRequests"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    assert "429" in one_error_line(err)
    assert slept and sum(slept) <= kube.MAX_RETRY_WAIT
    assert len(slept) <= kube.MAX_RETRIES


# -- --request-timeout bounds the whole request ----------------------------------------------------

def test_request_timeout_bounds_a_body_that_drips(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            body = json.dumps(EMPTY_LIST).encode()
            return 200, {}, ((body[i:i + 1], 0.25) for i in range(len(body)))
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    t0 = time.monotonic()
    code, out, err = run(fake, "verify", "--request-timeout", "1s")
    took = time.monotonic() - t0
    assert code == 2
    line = one_error_line(err)
    assert "did not answer within the request timeout of 1s" in line and fake.url in line
    assert took < 2.5, took


def _verify_where_pods_never_answer(fake_server, *flags):
    """`verify` against a server whose Pod list sends no headers (the list is held for 20 s);
    returns the exit code, the one error line and the seconds it took."""
    release = threading.Event()

    def route(req):
        if "/pods" in req["path"]:
            release.wait(20)
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    t0 = time.monotonic()
    try:
        code, out, err = run(fake, "verify", *flags)
    finally:
        release.set()
    return code, one_error_line(err), time.monotonic() - t0


def test_request_timeout_bounds_headers_that_never_come(fake_server):
    code, line, took = _verify_where_pods_never_answer(fake_server, "--request-timeout", "500ms")
    assert code == 2
    assert "request timeout" in line
    assert took < 2


def test_a_slow_but_timely_body_is_read_whole(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            body = json.dumps(EMPTY_LIST).encode()
            return 200, {}, ((body[i:i + 8], 0.02) for i in range(0, len(body), 8))
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify", "--request-timeout", "5s")
    read_all_found_nothing(code, err)


# -- lists that never end --------------------------------------------------------------------------

def test_a_repeating_continue_token_stops_with_a_clear_error(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            return 200, {}, {"kind": "List", "metadata": {"continue": "same"}, "items": []}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    assert "same continue token twice" in one_error_line(err)
    assert len([p for p in fake.paths() if p.endswith("/modeldeployments")]) <= 3


def test_pages_that_never_end_stop_with_a_clear_error(fake_server):
    counter = {"n": 0}

    def route(req):
        if "/kvcachepoolbindings" in req["path"]:
            counter["n"] += 1
            return 200, {}, {"kind": "List", "metadata": {"continue": f"t{counter['n']}"}, "items": []}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    assert "empty pages in a row" in one_error_line(err)
    assert counter["n"] <= kube.MAX_EMPTY_PAGES + 2


def test_every_page_is_read_when_the_tokens_move_on(fake_server):
    """The guard does not cut real paging: 3 pages of one deployment each."""
    def md(i):
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
                "metadata": {"name": f"md-{i}", "namespace": "llm-prod", "uid": f"u{i}"},
                "spec": {"engine": {"name": "vllm", "version": "0.29.0"}, "roles": []}}

    def route(req):
        if "/modeldeployments" in req["path"]:
            page = int(req["query"].get("continue", "0"))
            meta = {"continue": str(page + 1)} if page < 2 else {}
            return 200, {}, {"kind": "List", "metadata": meta, "items": [md(page)]}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "check", "-o", "json", "--chunk-size", "1")
    assert code in (0, 1), err
    assert [r["query"].get("continue") for r in fake.requests if r["path"].endswith("/modeldeployments")] == \
        [None, "1", "2"]


# -- Ctrl-C -----------------------------------------------------------------------------------------

def _hanging(release, where=("/pods", "/modeldeployments")):
    def route(req):
        if any(w in req["path"] for w in where):
            release.wait(30)
        if req["path"] in DISCOVERY:
            return 200, {}, DISCOVERY[req["path"]]
        if req["path"].endswith("/settings/model-deployment-kv-cache-dtype-owned"):
            return 404, {}, {"kind": "Status", "reason": "NotFound", "message": "not found"}
        return 200, {}, EMPTY_LIST
    return route


@pytest.mark.parametrize("argv,where", [
    (("verify",), ("/pods", "/modeldeployments")),
    (("verify", "--request-timeout", "1m"), ("/pods", "/modeldeployments")),
    (("check",), ("/pods", "/modeldeployments")),
    (("verify",), ("/apis/",)),                  # while connecting, before the command's modules are loaded
], ids=["verify-lists", "verify-timeout-lists", "check-lists", "verify-discovery"])
def test_ctrl_c_ends_a_hung_request_at_once(fake_server, argv, where):
    release = threading.Event()
    fake = fake_server(_hanging(release, where), raw=True)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-m", "kubectl_kvcache", *argv, "--kubeconfig", fake.kubeconfig],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                         preexec_fn=_sigint_default)
    try:
        deadline = time.monotonic() + 20
        while not any(w in r["path"] for r in fake.requests for w in where):
            assert time.monotonic() < deadline, "the plugin never sent its lists"
            time.sleep(0.05)
        time.sleep(0.3)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)
        took = time.monotonic() - t0
    finally:
        release.set()
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130, err
    assert err.strip() == "error: interrupted"
    assert took < 1.5, took


def test_without_retry_after_an_error_is_not_retried_as_client_go(fake_server):
    def route(req):
        if "/modeldeployments" in req["path"]:
            return 503, {}, {"kind": "Status", "reason": "ServiceUnavailable", "message": "down"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2 and "503" in one_error_line(err)
    assert len([p for p in fake.paths() if p.endswith("/modeldeployments")]) == 1


def test_a_500_with_retry_after_is_retried_too(fake_server):
    answers = {"n": 0}

    def route(req):
        if "/kvcachepoolbindings" in req["path"]:
            answers["n"] += 1
            if answers["n"] == 1:
                return 500, {"Retry-After": "0"}, {"kind": "Status", "reason": "InternalError"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    read_all_found_nothing(code, err)
    assert answers["n"] == 2


def test_a_kept_alive_connection_the_server_closed_is_replaced_once(fake_server):
    fake = fake_server(lists_empty)
    fake.hang_up = True
    code, out, err = run(fake, "verify", "--chunk-size", "1")
    read_all_found_nothing(code, err)
    code, out, err = run(fake, "check")
    read_all_found_nothing(code, err)


def test_an_unreachable_server_is_one_line_naming_it(tmp_path):
    import socket as _socket

    s = _socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()       # nothing listens there now
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["verify", "--kubeconfig", str(kubeconfig)], stdin=io.StringIO(""), stdout=out, stderr=err)
    assert code == 2
    line = one_error_line(err.getvalue())
    assert f"cannot reach the API server at http://127.0.0.1:{port}" in line and "refused" in line.lower()


SETTING = {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
           "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system",
                        "resourceVersion": "7"},
           "spec": {"value": "true"},
           "status": {"value": "true", "editable": True, "description": "d", "sensitive": False}}


def test_a_write_is_never_sent_twice_when_the_server_hangs_up(fake_server):
    def route(req):
        if req["path"].endswith("/settings/model-deployment-kv-cache-dtype-owned"):
            if req["method"] == "PATCH":
                return None, None, None
            return 200, {}, SETTING
        if req["path"] in DISCOVERY:
            return 200, {}, DISCOVERY[req["path"]]
        return 200, {}, EMPTY_LIST
    fake = fake_server(route, raw=True)
    code, out, err = run(fake, "setting", "off", "--yes")
    assert code == 2
    assert "closed the connection" in one_error_line(err)
    assert [r["method"] for r in fake.requests].count("PATCH") == 1


def test_a_write_goes_on_a_new_connection_so_a_stale_one_cannot_fail_it(fake_server):
    patched = []

    def route(req):
        if req["path"].endswith("/settings/model-deployment-kv-cache-dtype-owned"):
            if req["method"] == "PATCH":
                patched.append(req)
                return 200, {}, dict(SETTING, spec={"value": "false"})
            return 200, {}, SETTING
        if req["path"] in DISCOVERY:
            return 200, {}, DISCOVERY[req["path"]]
        return 200, {}, EMPTY_LIST
    fake = fake_server(route, raw=True)
    fake.hang_up = True         # every kept-alive connection is stale by the time it is reused
    code, out, err = run(fake, "setting", "off", "--yes")
    assert code == 0, err
    assert len(patched) == 1


# -- the command line's own run: the snapshot is loaded while the command's modules import ------

def run_command_line(fake, *argv):
    """The real entry point in its own process (argv from the command line: the warm thread
    loads the snapshot verify and check read first)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "kubectl_kvcache", *argv, "--kubeconfig", fake.kubeconfig],
                          capture_output=True, text=True, env=env, timeout=60)


def refuse_pods(req):
    if req["path"].endswith("/pods"):
        return 403, {}, {"kind": "Status", "reason": "Forbidden",
                         "message": 'pods is forbidden: User "u" cannot list resource "pods"'}
    return 200, {}, EMPTY_LIST


@pytest.mark.parametrize("command", ["verify", "check"])
def test_a_refusal_met_while_loading_ahead_is_the_commands_one_error_line(fake_server, command):
    fake = fake_server(refuse_pods)
    p = run_command_line(fake, command, "-n", "llm-prod")
    assert p.returncode == 2 and p.stdout == ""
    assert one_error_line(p.stderr) == ('error: forbidden: cannot list pods in namespace llm-prod: pods is '
                                        'forbidden: User "u" cannot list resource "pods"')


def test_the_snapshot_loaded_ahead_is_the_one_judged_and_each_list_is_asked_for_once(fake_server):
    fake = fake_server(lists_empty)
    p = run_command_line(fake, "verify", "-n", "llm-prod", "-o", "json")
    read_all_found_nothing(p.returncode, p.stderr, p.stdout)
    assert json.loads(p.stdout)["items"] == []
    lists = [r["path"] for r in fake.requests if r["path"].endswith(("/pods", "/modeldeployments",
                                                                      "/kvcachepoolbindings"))]
    assert sorted(lists) == sorted(["/api/v1/namespaces/llm-prod/pods"] * 2 + [
        f"/apis/{GROUP}/{VERSION}/namespaces/llm-prod/modeldeployments",
        f"/apis/{GROUP}/{VERSION}/namespaces/llm-prod/kvcachepoolbindings"])


# -- writes whose answer is lost are read again and reported as what happened ----------------------

class SettingServer:
    """The Setting as a store: a PATCH with a stale resourceVersion is 409, as the API server
    answers it; `first(req)` may answer the first PATCH instead, after applying it or not."""

    def __init__(self, first, apply_first=True):
        self.first, self.apply_first = first, apply_first
        self.obj = json.loads(json.dumps(SETTING))
        self.patches = 0

    def route(self, req):
        if req["path"].endswith("/settings/model-deployment-kv-cache-dtype-owned"):
            if req["method"] != "PATCH":
                return 200, {}, self.obj
            self.patches += 1
            patch = json.loads(req["body"])
            if self.patches == 1 and not self.apply_first:
                return self.first(req)
            if patch["metadata"]["resourceVersion"] != self.obj["metadata"]["resourceVersion"]:
                return 409, {}, {"kind": "Status", "code": 409, "reason": "Conflict",
                                 "message": "the object has been modified"}
            self.obj["spec"]["value"] = patch["spec"]["value"]
            self.obj["metadata"]["resourceVersion"] = str(int(self.obj["metadata"]["resourceVersion"]) + 1)
            if self.patches == 1:
                return self.first(req)
            return 200, {}, self.obj
        if req["path"] in DISCOVERY:
            return 200, {}, DISCOVERY[req["path"]]
        return 200, {}, EMPTY_LIST


def test_a_patch_applied_but_answered_500_then_409_reports_the_setting_as_it_now_is(fake_server):
    store = SettingServer(lambda req: (500, {"Retry-After": "0"}, {"kind": "Status", "code": 500,
                                                                   "message": "etcdserver: request timed out"}))
    fake = fake_server(store.route, raw=True)
    code, out, err = run(fake, "setting", "off", "--yes")
    assert code == 0, err
    assert store.patches == 2 and store.obj["spec"]["value"] == "false"
    assert "nothing was overwritten" not in out + err
    assert "the answer to the patch was lost" in err and "500" in err and "'false'" in err
    assert "patched" in out


def test_a_patch_applied_whose_connection_drops_before_the_answer_is_read_again(fake_server):
    store = SettingServer(lambda req: (None, None, None))      # applied, then the connection ends
    fake = fake_server(store.route, raw=True)
    code, out, err = run(fake, "setting", "off", "--yes")
    assert code == 0, err
    assert store.patches == 1, "a write is never sent twice"
    assert "the answer to the patch was lost" in err and "went out whole" in err


def test_a_lost_answer_whose_change_does_not_hold_is_an_error_that_says_so(fake_server):
    store = SettingServer(lambda req: (None, None, None), apply_first=False)
    fake = fake_server(store.route, raw=True)
    code, out, err = run(fake, "setting", "off", "--yes")
    assert code == 2
    line = one_error_line(err)
    assert "closed the connection" in line and "its answer was lost" in line and "does not show the change" in line
    assert store.obj["spec"]["value"] == "true" and store.patches == 1


def test_a_409_without_a_lost_answer_is_still_nothing_overwritten(fake_server):
    store = SettingServer(None)
    store.obj["metadata"]["resourceVersion"] = "7"

    def route(req):     # someone else's change lands between the read and the patch
        if req["method"] == "PATCH":
            store.obj["metadata"]["resourceVersion"] = "9"
        return store.route(req)
    fake = fake_server(route, raw=True)
    code, out, err = run(fake, "setting", "off", "--yes")
    assert code == 2
    assert "nothing was overwritten" in one_error_line(err)


@pytest.mark.parametrize("verb", ["create", "delete", "patch"])
def test_settle_re_reads_every_kind_of_write_whose_answer_was_lost(fake_server, verb):
    """Client.settle is the write path's: create answered 409 AlreadyExists after a lost 503, a
    delete answered 404 after a lost 500, a patch whose connection dropped."""
    from kubectl_kvcache.kube.connection import Connection

    state = {"exists": verb != "create", "writes": 0}

    def route(req):
        if req["method"] == "GET":
            return (200, {}, {"metadata": {"name": "x"}}) if state["exists"] else \
                (404, {}, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "no"})
        state["writes"] += 1
        if verb == "create":
            state["exists"] = True
            return (503, {"Retry-After": "0"}, {"code": 503}) if state["writes"] == 1 else \
                (409, {}, {"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": "exists"})
        if verb == "delete":
            state["exists"] = False
            return (500, {"Retry-After": "0"}, {"code": 500}) if state["writes"] == 1 else \
                (404, {}, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "gone"})
        return None, None, None
    fake = fake_server(route, raw=True)
    fake.server.RequestHandlerClass.do_DELETE = fake.server.RequestHandlerClass.do_GET
    client = kube.Client(Connection(kubeconfig=fake.kubeconfig))
    path = "/api/v1/namespaces/n/configmaps/x"
    send = {"create": lambda: client.create("/api/v1/namespaces/n/configmaps", {"metadata": {"name": "x"}}),
             "delete": lambda: client.delete(path),
             "patch": lambda: client.patch_merge(path, {"data": {"a": "b"}})}[verb]
    result, lost = client.settle(send, lambda: client.get_or_none(path),
                                 lambda obj: (obj is None) if verb == "delete" else obj is not None)
    assert lost, "the lost answer is said"
    assert state["writes"] == (1 if verb == "patch" else 2)


def test_a_write_refused_outright_is_not_re_read(fake_server):
    from kubectl_kvcache.errors import Forbidden
    from kubectl_kvcache.kube.connection import Connection

    def route(req):
        if req["method"] == "GET":
            raise AssertionError("re-read")
        return 403, {}, {"kind": "Status", "code": 403, "reason": "Forbidden", "message": "no"}
    fake = fake_server(route, raw=True)
    client = kube.Client(Connection(kubeconfig=fake.kubeconfig))
    with pytest.raises(Forbidden):
        client.settle(lambda: client.patch_merge("/api/v1/namespaces/n/configmaps/x", {}),
                      lambda: client.get("/x"), lambda obj: True)


# -- bounded memory: answers and watch events have size limits -----------------------------------

def _endless(piece, count):
    return ((piece, 0) for _ in range(count))


def test_a_list_answer_that_never_ends_stops_at_the_body_limit(fake_server, monkeypatch):
    from kubectl_kvcache.kube import transport

    monkeypatch.setattr(transport, "MAX_BODY", 1 << 20)
    monkeypatch.setattr(transport.Response.read_all, "__defaults__", (1 << 20,))
    sent = []

    def route(req):
        if "/modeldeployments" in req["path"]:
            def body():
                yield b'{"kind":"List","metadata":{},"items":[', 0
                for _ in range(1 << 16):        # 4 GiB if nobody stopped reading
                    sent.append(1)
                    yield b'{"a":"' + b"x" * 65536 + b'"},', 0
            return 200, {}, body()
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2
    line = one_error_line(err)
    assert "too large" in line and "1 MiB" in line and "list" in line
    assert len(sent) < 200, "the rest of the answer was not read"


def test_the_body_limit_is_far_above_real_pages():
    from kubectl_kvcache.kube import transport

    assert transport.MAX_BODY >= 500 * 512 * 1024       # --chunk-size 500 objects of 512 KiB
    assert transport.MAX_EVENT_LINE >= 4 * 1536 * 1024   # etcd's 1.5 MiB object, 4x as JSON


def test_a_content_length_past_the_limit_is_refused_before_reading(fake_server, monkeypatch):
    from kubectl_kvcache.kube import transport

    monkeypatch.setattr(transport.Response.read_all, "__defaults__", (1 << 20,))

    def route(req):
        if "/modeldeployments" in req["path"]:
            return 200, {}, b" " * (2 << 20)
        return 200, {}, EMPTY_LIST
    fake = fake_server(route)
    code, out, err = run(fake, "verify")
    assert code == 2 and "too large" in one_error_line(err)


def test_a_watch_event_line_that_never_ends_stops_at_the_event_limit(fake_server, monkeypatch):
    from kubectl_kvcache.kube import transport

    monkeypatch.setattr(transport.Response.read_line, "__defaults__", (1 << 20,))
    sent = []

    def route(req):
        if req["query"].get("watch") == "true":
            def body():
                yield b'{"type":"ADDED","object":{"a":"', 0
                for _ in range(1 << 16):
                    sent.append(1)
                    yield b"x" * 65536, 0
            return 200, {}, body()
        return 200, {}, {"kind": "List", "metadata": {"resourceVersion": "5"}, "items": []}
    fake = fake_server(route)
    from kubectl_kvcache.kube.connection import Connection

    client = kube.Client(Connection(kubeconfig=fake.kubeconfig))
    with pytest.raises(kube.PluginError) as caught:
        list(client.watch("/api/v1/namespaces/n/pods", "5"))
    assert "too large" in str(caught.value) and "1 MiB" in str(caught.value) and "watch" in str(caught.value)
    assert len(sent) < 200


# -- bounded time without --request-timeout: client-go's transport bounds -------------------------

def test_an_answer_that_never_comes_ends_at_the_read_idle_bound(fake_server, monkeypatch):
    from kubectl_kvcache.kube import transport

    monkeypatch.setattr(transport, "READ_IDLE_TIMEOUT", 0.5)
    code, line, took = _verify_where_pods_never_answer(fake_server)
    assert code == 2
    assert "sent nothing for 0.5s" in line
    assert took < 10


def test_a_kept_alive_connection_idle_past_the_idle_conn_timeout_is_not_reused(fake_server, monkeypatch):
    from kubectl_kvcache.kube import transport
    from kubectl_kvcache.kube.connection import Connection

    fake = fake_server(lists_empty)
    client = kube.Client(Connection(kubeconfig=fake.kubeconfig))
    client.get("/api/v1/namespaces/n/pods")
    (conn,) = client._transport._idle
    monkeypatch.setattr(transport, "IDLE_CONN_TIMEOUT", 0.0)
    time.sleep(0.01)
    client.get("/api/v1/namespaces/n/pods")
    assert conn.sock is None, "the idle connection was closed"


# -- the token of a file is re-read while the run lasts (client-go's cachingTokenSource) ----------

def _token_file_client(fake, tmp_path, token):
    from kubectl_kvcache.kube.connection import Connection

    path = tmp_path / "token"
    path.write_text(token + "\n")
    kubeconfig = tmp_path / "tokenfile-config"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": fake.url.replace("http://", "https://"),
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"tokenFile": str(path)}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path, Connection(kubeconfig=str(kubeconfig))


def test_a_token_file_is_re_read_after_its_period_and_after_a_401(fake_server, tmp_path, monkeypatch):
    from kubectl_kvcache.kube import kubeconfig

    now = [1e12]        # the token's clock, far from time.monotonic()'s (CI failed when uptime < 1,051 s)
    sent = []
    valid = {"Bearer token-one"}

    def route(req):
        sent.append(req["headers"].get("Authorization"))
        if req["headers"].get("Authorization") not in valid:
            return 401, {}, {"kind": "Status", "code": 401, "reason": "Unauthorized"}
        return 200, {}, EMPTY_LIST
    fake = fake_server(route, raw=True)
    path, _ = _token_file_client(fake, tmp_path, "token-one")
    target = kubeconfig.Target(server=fake.url, authorization="Bearer token-one", token_file=str(path))
    from kubectl_kvcache.kube.connection import Connection

    client = kube.Client(Connection(), target=target)
    client._token.clock = lambda: now[0]
    client._token.read_at = now[0]
    client.get("/api/v1/pods")
    path.write_text("token-two\n")          # the kubelet rotates it
    valid.add("Bearer token-two")
    now[0] += 49
    client.get("/api/v1/pods")
    assert sent[-1] == "Bearer token-one", "within the period the cached token is sent"
    now[0] += 2                             # 51 s: past period (60 s) minus leeway (10 s)
    client.get("/api/v1/pods")
    assert sent[-1] == "Bearer token-two"
    now[0] += 1                             # a second later (within the period: token-two is cached)
    path.write_text("token-three\n")        # rotated again, and the old token revoked at once
    valid.clear()
    valid.add("Bearer token-three")
    client.get("/api/v1/pods")              # a 401 forgets the token read before it; sent again
    assert sent[-2:] == ["Bearer token-two", "Bearer token-three"]
    valid.clear()                           # a 401 the file cannot mend is the command's error
    before = len(sent)
    with pytest.raises(kube.PluginError, match="401"):
        client.get("/api/v1/pods")
    assert sent[before:] == ["Bearer token-three"], "not sent again with the same token"
    valid.add("Bearer token-three")
    path.write_text("")                     # a file that cannot give a token keeps the last one
    now[0] += 100
    client.get("/api/v1/pods")
    assert sent[-1] == "Bearer token-three"


def test_the_in_cluster_token_and_a_token_file_are_re_read_but_a_token_flag_is_not(tmp_path, monkeypatch):
    from kubectl_kvcache.kube import kubeconfig
    from kubectl_kvcache.kube.connection import Connection

    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token\n")
    (sa / "namespace").write_text("team\n")
    monkeypatch.setattr(kubeconfig, "SA_DIR", str(sa))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    target = kubeconfig.resolve(Connection())
    assert target.token_file == str(sa / "token") and target.authorization == "Bearer sa-token"
    assert kubeconfig.resolve(Connection(token="flag-token")).token_file is None       # --token clears it
    path, conn = _token_file_client(type("F", (), {"url": "http://127.0.0.1:1"}), tmp_path, "file-token")
    assert kubeconfig.resolve(conn).token_file == str(path)


def test_a_watch_answered_401_after_a_rotation_is_watched_again_with_the_new_token(fake_server, tmp_path):
    from kubectl_kvcache.kube import kubeconfig
    from kubectl_kvcache.kube.connection import Connection

    sent = []

    def route(req):
        sent.append(req["headers"].get("Authorization"))
        if req["headers"].get("Authorization") != "Bearer new":
            return 401, {}, {"kind": "Status", "code": 401, "reason": "Unauthorized"}
        return 200, {}, ((json.dumps({"type": "ADDED", "object": {"metadata": {"name": "p"}}}).encode() + b"\n", 0),)
    fake = fake_server(route, raw=True)
    path = tmp_path / "token"
    path.write_text("old")
    client = kube.Client(Connection(), target=kubeconfig.Target(server=fake.url, authorization="Bearer old",
                                                                token_file=str(path)))
    path.write_text("new")
    events = list(client.watch("/api/v1/pods", "1", timeout_seconds=5))
    assert [e[1]["metadata"]["name"] for e in events] == ["p"]
    assert sent == ["Bearer old", "Bearer new"]
