"""JSON config options (issue 29): the model's answer for a document given to a config option
(`--compilation-config`, `--kv-transfer-config` with any connector, `--kv-events-config`, ...;
whole documents, levels, and the dotted `-cc.x=y` / `--name.x=y` forms) equals the real entry
point's, on documents the generator never probed: several fields together, every connector the
release registers with each role, values of the wrong type, unknown keys."""

import json
import os
import random
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tierstats as tier  # noqa: E402
from releases import TIER as RELEASES  # noqa: E402  (this run's slice: releases.tier_releases)
from test_conformance import MODEL, check, model_answer  # noqa: E402

from kubectl_kvcache.engine import data  # noqa: E402
from kubectl_kvcache.engine.releases import _in_spans, _sample, parse_version  # noqa: E402

COUNT = int(os.environ.get("KVCACHE_DOCUMENT_CASES", "120"))
PARAMS = [pytest.param(v, id=f"vllm-{v}") for v in RELEASES["vllm"]]
TYPED = {"bool": [True, False], "int": [0, 2, 16], "float": [0.25, 3], "str": ["x", "y/z"], "dict": [{}, {"k": "v"}],
         "obj": [{}, {"zz_unknown": 1}], "list:int": [[1, 2, 4, 8, 16], [], [3], [1, 2, "4"], [8, None]],
         "list:str": [["+rms_norm"], [], ["none"], ["x", 1]], "list:float": [[0.25], []], "list:bool": [[False]]}
# pydantic's lax mode (a string for a bool or a number, a whole float for an int)
LAX = {"bool": ["True", "false", "yes", "1", 0], "int": ["4", 4.0], "float": ["0.5"]}
WRONG = [[1, 2], {"a": 1}, "nope", 2.5, None, True, 7, "1"]
CONNECTORS = ["NixlConnector", "LMCacheConnectorV1", "P2pNcclConnector", "MooncakeConnector", "MultiConnector",
              "OffloadingConnector", "SharedStorageConnector", "ExampleConnector", "NoSuchConnector",
              # connectors of other packages (vllm-ascend, LMCache, Mooncake) and later releases (issue 52)
              "MooncakeConnectorV1", "MooncakeStoreConnector", "LMCacheMPConnector", "AscendStoreConnector"]
ROLES = ["kv_both", "kv_producer", "kv_consumer", "kv_nonsense"]
# what real commands write (issue 29's corpus)
SEEN = {"--compilation-config": ['{"use_inductor": false}', '{"level": 3}', "3", '{"cudagraph_mode": "FULL_DECODE_ONLY"}',
                                 '{"cudagraph_capture_sizes": [1, 2, 4, 8]}', '{"mode": 3}', "0",
                                 '{"pass_config": {"fuse_allreduce_rms": true}}',
                                 '{"pass_config": {"fuse_rope_kvcache": "True"}, "use_inductor_graph_partition": "True"}'],
        "--kv-transfer-config": ['{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}',
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}',
                                 '{"kv_connector":"P2pNcclConnector","kv_role":"kv_producer","kv_port":"21001",'
                                 '"kv_connector_extra_config":{"proxy_port":"30001"}}',
                                 '{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":'
                                 '{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},'
                                 '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}]}}',
                                 # issue 52: the shapes of Mooncake's, LMCache's, NIXL's, vllm-ascend's docs
                                 '{"kv_connector": "MooncakeConnectorV1", "kv_role": "kv_producer", "kv_port": "30000",'
                                 ' "engine_id": "0", "kv_connector_extra_config": {"prefill": {"dp_size": 2, "tp_size": 8},'
                                 ' "decode": {"dp_size": 4, "tp_size": 4}}}',
                                 '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}',
                                 '{"kv_connector":"MooncakeConnector","kv_role":"kv_consumer",'
                                 '"kv_connector_extra_config":{"mooncake_protocol":"efa"}}',
                                 '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer","kv_rank":0,'
                                 '"kv_parallel_size":2,"kv_buffer_size":2e9}',
                                 '{"kv_connector":"LMCacheMPConnector","kv_role":"kv_both","kv_connector_extra_config":'
                                 '{"lmcache.mp.host":"tcp://localhost","lmcache.mp.port":5555}}',
                                 '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both","kv_connector_extra_config":'
                                 '{"lmcache.local_cpu":true,"lmcache.max_local_cpu_size":40}}',
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"recompute"}',
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_buffer_device":"cuda",'
                                 '"kv_connector_extra_config":{"backends":["UCX","GDS"]}}',
                                 '{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":'
                                 '{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},'
                                 '{"kv_connector":"NoSuchConnector","kv_role":"kv_nonsense"}]}}',
                                 '{"kv_connector":"AscendStoreConnector","kv_role":"kv_consumer","kv_connector_module_path":'
                                 '"vllm_ascend.distributed.kvpool.ascend_store_connector",'
                                 '"kv_connector_extra_config":{"backend":"mooncake"}}',
                                 '{"kv_connector":"P2pNcclConnector","kv_role":"kv_producer","kv_port":"21001",'
                                 '"engine_id":"prefill-0","kv_connector_extra_config":{"proxy_ip":"10.0.0.1",'
                                 '"proxy_port":"30001","http_port":"20001"}}',
                                 '{"kv_connector":"MooncakeConnectorV1"}',
                                 # a wrong member of an enum or literal, a wrong type
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"retry"}',
                                 '{"kv_connector":"NixlConnector","kv_role":"producer"}',
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_port":"abc"}',
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_port":30000.5}',
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":["x"]}',
                                 '{"kv_connector":123,"kv_role":"kv_both"}'],
        "--kv-events-config": ['{"enable_kv_cache_events": true, "publisher": "zmq"}',
                               '{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:5557"}',
                               '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557",'
                               '"topic":"kv-events","replay_endpoint":"tcp://*:5558","buffer_steps":"10000"}',
                               '{"enable_kv_cache_events":true,"publisher":"kafka"}'],
        "--eplb-config": ['{"window_size":1000,"step_interval":3000,"num_redundant_experts":32,"log_balancedness":false}',
                          '{"num_redundant_experts":"32"}', '{"use_async":true,"communicator":"pynccl"}',
                          '{"num_redundant_experts":256}', '{"policy":"flashinfer"}'],
        "--profiler-config": ['{"profiler":"torch","torch_profiler_dir":"/workspace/traces"}', '{"profiler":"cuda"}',
                              '{"profiler":"nsys"}', '{"profiler":"torch","torch_profiler_dir":"/t","max_iterations":"5"}']}

# JSON options of no config class (json.loads, vLLM < 0.10's KEY=VALUE form), when the release has them
PLAIN = {"--limit-mm-per-prompt": ['{"image": 4, "video": 1}', "image=2,video=1", '{"video": 0}', "image=x", ""],
         "--mm-processor-kwargs": ['{"max_soft_tokens": 560}', "{x}", '{"num_crops": 4}']}


def has_option(version, name):
    at = _sample("vllm", parse_version(version))
    return bool(_in_spans(at, data.parsers()["vllm"]["options"].get(name, [])))


def schemas(version):
    at = _sample("vllm", parse_version(version))
    texts = {n: v for n, rows in data.parsers()["vllm"].get("schemas", {}).items() for v in [_in_spans(at, rows)] if v}
    return {n: json.loads(texts[v[1:]] if v.startswith("=") else v) for n, v in texts.items()
            if not v.startswith("=") or v[1:] in texts}


def value_for(rng, kind):
    base = re.sub(r"(>=|>)-?[0-9]+$", "", kind.lstrip("?"))   # a bounded number (kvparse._BOUNDED)
    if rng.random() < 0.2:
        return rng.choice(WRONG)
    if base.startswith("lit:"):
        return rng.choice(base[4:].split("|") + ["no_such_value"])
    if kind.startswith("?") and rng.random() < 0.2:
        return None
    if base in LAX and rng.random() < 0.2:
        return rng.choice(LAX[base])
    return rng.choice(TYPED.get(base, WRONG))


def nested(rng, names):
    """A nested config's document (`{"pass_config": {...}}`): its own fields and unknown ones, each
    given a bool, a lax bool, a number or a string."""
    doc = {}
    for name in rng.sample(names, min(len(names), rng.choice([1, 1, 2]))) + (["zz_unknown"] if rng.random() < 0.1 else []):
        doc[name] = rng.choice([True, False, "True", 1, 0.5, "x"])
    return doc


def document(rng, sch):
    fields = sorted(sch["f"])
    doc = {}
    for name in rng.sample(fields, min(len(fields), rng.choice([1, 2, 2, 3, 4]))):
        doc[name] = value_for(rng, sch["f"][name])
        if name in sch.get("n", {}) and rng.random() < 0.7:
            doc[name] = nested(rng, sch["n"][name])
    if "kv_connector" in sch["f"] and rng.random() < 0.6:
        doc["kv_connector"] = rng.choice(CONNECTORS)
        if rng.random() < 0.9:
            doc["kv_role"] = rng.choice(ROLES)
        if rng.random() < 0.3:
            doc["engine_id"] = rng.choice(["0", "prefill-1", "", None])
        if rng.random() < 0.3:
            doc["kv_port"] = rng.choice(["30000", "0", 14579, "1e3", "-1"])
        if rng.random() < 0.3:
            # a connector's own settings; MultiConnector's nested connectors
            doc["kv_connector_extra_config"] = rng.choice([
                {}, {"backends": ["UCX"]}, {"mooncake_protocol": "tcp"},
                {"connectors": [{"kv_connector": rng.choice(CONNECTORS), "kv_role": rng.choice(ROLES)}
                                for _ in range(rng.choice([1, 2]))]}])
    if rng.random() < 0.05:
        doc["zz_unknown"] = 1
    return doc


def cases(version, seed=29):
    rng = random.Random(f"{seed} {version}")
    found = schemas(version)
    out = []
    if not found:
        return out
    names = sorted(n for n in found if n.startswith("--"))
    for entry in ("api_server", "serve"):
        for name, docs in SEEN.items():
            if name in found:
                out += [(entry, MODEL[entry] + [name, d, "--kv-cache-dtype", "fp8"]) for d in docs]
        for name, docs in PLAIN.items():
            if has_option(version, name):
                out += [(entry, MODEL[entry] + [name, d, "--kv-cache-dtype", "fp8"]) for d in docs]
        for _ in range(COUNT):
            name = rng.choice(names)
            doc = document(rng, found[name])
            text = json.dumps(doc, separators=(",", ":") if rng.random() < 0.5 else (", ", ": "))
            form = rng.random()
            if form < 0.6:
                words = [name, text]
            elif form < 0.8:
                words = [f"{name}={text}"]
            else:
                # the dotted form, one key at a time (vLLM >= 0.9 turns it into JSON for the option)
                words = []
                for key, value in doc.items():
                    shown = value if isinstance(value, str) else json.dumps(value)
                    words += [f"{name}.{key}", shown] if rng.random() < 0.5 else [f"{name}.{key}={shown}"]
            out.append((entry, MODEL[entry] + words + (["--kv-cache-dtype", "fp8"] if rng.random() < 0.5 else [])))
    return out


@pytest.mark.parametrize("version", PARAMS)
def test_config_documents_agree_with_the_real_entry_points(oracles, version):
    try:
        found = cases(version)
        if not found:
            # never a skip (CI makes a skip a failure): a release before the first one with such data
            # has nothing to test; a gap after it is a failure
            first = next((v for v in RELEASES["vllm"] if cases(v)), None)
            assert first is not None and RELEASES["vllm"].index(version) < RELEASES["vllm"].index(first), (
                f"vllm {version}: no config-class options in the data, though vllm {first} has some")
            return
        check(oracles, "vllm", version, found)
        decided = sum(1 for entry, argv in found if model_answer("vllm", version, entry, argv)[0][0] != "unknown")
        tier.STATS["config documents decided"] += decided
        tier.STATS["config documents"] += len(found)
    finally:
        oracles.close_one("vllm", version)
