"""Which crashed replicas' previous logs a plain `verify` reads (issue 47 item 5): only containers
whose status says they crash now (CrashLoopBackOff, or a non-zero last exit and not ready since),
at most observed.CRASH_READS of them, one per deployment role first; the rest are named in one
note and keep their prediction. Through the real client and transport against the loopback fake
server (tests/fakeserver.py); the real API server and kubelet path is tests/cluster's."""

import io
import json

import pytest

import objects as o
from kubectl_kvcache.cli import main
from kubectl_kvcache.judge import observed

# vLLM's attention selector refusing the dtype (vllm/attention/selector.py), the crash's last line
TRACEBACK = ("Traceback (most recent call last):\n  File \"/usr/bin/vllm\", line 8, in <module>\n"
             "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=128, "
             "dtype=torch.bfloat16, kv_cache_dtype=fp8, block_size=None). Reasons: {FLASH_ATTN: "
             "[kv_cache_dtype not supported]}\n")


def listing(items):
    return {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": items}


def pod(name, md, *, waiting=None, exit_code=None, ready=False, running=True):
    p = o.md_pod(name, md, o.vllm_argv("fp8"))
    cs = {"name": "main", "ready": ready, "restartCount": 3 if exit_code is not None else 0,
          "state": {"waiting": {"reason": waiting}} if waiting else ({"running": {}} if running else {})}
    if exit_code is not None:
        cs["lastState"] = {"terminated": {"exitCode": exit_code, "reason": "Error"}}
    p["status"]["containerStatuses"] = [cs]
    return p


def scene(pods, deployments):
    def route(req):
        path, query = req["path"], req["query"]
        if path.endswith("/log"):
            name = path.split("/")[-2]
            if query.get("previous") != "true":
                return 400, {}, {"kind": "Status", "code": 400, "message": "unexpected current log read"}
            return 200, {"Content-Type": "text/plain"}, ("INFO loading " + name + "\n" + TRACEBACK).encode()
        if path.endswith("/modeldeployments"):
            return 200, {}, listing(deployments)
        if path.endswith("/kvcachepoolbindings"):
            return 200, {}, listing([o.binding("b1", "fp8")])
        if path.endswith("/pods"):
            return 200, {}, listing(pods)
        if "/pods/" in path:
            found = [p for p in pods if p["metadata"]["name"] == path.rsplit("/", 1)[1]]
            return (200, {}, found[0]) if found else (404, {}, {"kind": "Status", "code": 404, "reason": "NotFound"})
        if path.startswith("/api/v1/namespaces/") and path.count("/") == 4:
            return 200, {}, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}}
        return 200, {}, listing([])
    return route


def run(fake_server, route, *argv):
    fake = fake_server(route, namespace="team")
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", fake.kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue(), fake


def previous_reads(fake):
    return [r["path"].split("/")[-2] for r in fake.requests
            if r["path"].endswith("/log") and r["query"].get("previous") == "true"]


def crashing_fleet(n_deployments, replicas):
    deployments = [o.deployment(f"md{d:02d}", roles=[o.role(replicas=replicas)]) for d in range(n_deployments)]
    pods = [pod(f"md{d:02d}-server-{r}", f"md{d:02d}", waiting="CrashLoopBackOff", exit_code=1)
            for d in range(n_deployments) for r in range(replicas)]
    return pods, deployments


def test_at_most_the_cap_one_per_deployment_first_and_a_note_for_the_rest(fake_server):
    pods, deployments = crashing_fleet(12, 2)
    code, out, err, fake = run(fake_server, scene(pods, deployments), "verify", "-o", "json")
    read = previous_reads(fake)
    assert len(read) == observed.CRASH_READS == 8
    assert len({name.rsplit("-", 2)[0] for name in read}) == 8          # eight deployments, one replica each
    items = {i["pod"]: i for i in json.loads(out)["items"]}
    with_cause = {p for p, i in items.items() if "exitCause" in i}
    assert with_cause == set(read)
    assert all(items[p]["exitCause"]["kind"] == "startup" for p in with_cause)
    unread = sorted(set(items) - with_cause)
    assert len(unread) == 16
    notes = [ln for ln in err.splitlines() if "not read" in ln]
    assert len(notes) == 1 and notes[0].startswith("note: 16 more crashed engine containers"), err
    named = notes[0].split("kubectl kvcache verify -n team ", 1)[1].split()
    assert named[0] in unread and named[1:] == ["-o", "describe"]
    assert code == 1


def test_the_command_the_note_names_reads_that_pod(fake_server):
    pods, deployments = crashing_fleet(12, 2)
    _, _, err, _ = run(fake_server, scene(pods, deployments), "verify", "-o", "json")
    named = err.split("kubectl kvcache verify -n team ", 1)[1].split()[0]
    code, out, err, fake = run(fake_server, scene(pods, deployments), "verify", "-n", "team", named, "-o", "describe")
    assert previous_reads(fake) == [named] and "not read" not in err
    assert "Exit cause" in out and "No valid attention backend found" in out


@pytest.mark.parametrize("status, read", [
    (dict(waiting="CrashLoopBackOff", exit_code=1), True),
    (dict(waiting="CrashLoopBackOff"), True),                       # exits 0 again and again: still a crash loop
    (dict(exit_code=1), True),                                      # restarted, starting up, not ready yet
    (dict(exit_code=137, ready=True), False),                       # ready since an old crash
    (dict(exit_code=0), False),                                     # its last run ended cleanly
    (dict(), False),
])
def test_only_a_container_whose_status_says_it_crashes_is_read(fake_server, status, read):
    pods = [pod("md00-server-0", "md00", **status)]
    code, out, err, fake = run(fake_server, scene(pods, [o.deployment("md00")]), "verify", "-o", "json")
    assert previous_reads(fake) == (["md00-server-0"] if read else [])
    assert ("exitCause" in json.loads(out)["items"][0]) == read


def test_crashes_whose_cause_can_change_the_verdict_come_first(fake_server):
    # 10 deployments predicted REJECTED and confirmed by the parser's exit code 2 sort after one
    # predicted OK whose crash may be the dtype's
    deployments = [o.deployment(f"bad{d}", roles=[o.role()]) for d in range(10)] + [o.deployment("ok")]
    pods = []
    for d in range(10):
        p = o.md_pod(f"bad{d}-server-0", f"bad{d}", o.vllm_argv("fp8_e9"), exit_code=2)
        pods.append(p)
    pods.append(pod("ok-server-0", "ok", waiting="CrashLoopBackOff", exit_code=1))
    code, out, err, fake = run(fake_server, scene(pods, deployments), "verify", "-o", "json")
    read = previous_reads(fake)
    assert "ok-server-0" in read and len(read) == 8
    items = {i["pod"]: i for i in json.loads(out)["items"]}
    assert items["ok-server-0"]["exitCause"]["kind"] == "startup"
    assert "3 more crashed engine containers" in err
