"""Build the KV-connector corpora from harvest.py's candidates (a maintainer's tool, not run by tests).

    python connectors.py CANDIDATES.json [...] --tuned connectors.yaml --heldout connectors_heldout.yaml

Issue 52 item 3: launch commands that carry a KV connector's configuration (`--kv-transfer-config`,
`--kv-events-config`, SGLang's `--disaggregation-*` and `--hicache-*` options), from the connector
projects' own repositories (LMCache, NIXL, llm-d, Mooncake, vllm-ascend), from files neither
corpus.yaml nor heldout.yaml took a command from. Entries are taken as harvested (the filter below
is the only choice made, and it reads the command, never the plugin's answer), formed as
heldout.py forms them, without a command already in corpus.yaml or heldout.yaml. Whole
repositories (HELD_OUT) go to the held-out file, run only by test_zz_connectors_heldout.py, last;
the rest to the tuned file.
"""

import argparse
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import heldout  # noqa: E402  (its entry(): one candidate as a corpus entry)

KV = re.compile(r"--kv-transfer-config|--kv_transfer_config|kv_connector|--kv-events-config|--disaggregation-|"
                r"--hicache-|--enable-hierarchical-cache|--enable-lmcache")
# chosen before any row was judged: whole repositories, about half of the rows
HELD_OUT = ("llm-d-incubation/llm-d-modelservice", "LMCache/LMBench", "llm-d/llm-d.github.io",
            "LMCache/LMCache-Ascend", "vllm-project/vllm-ascend")


def written(e):
    return json.dumps([e.get(k) for k in ("command", "args", "entrypoint", "line", "env")], sort_keys=True)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates", nargs="+")
    ap.add_argument("--tuned", required=True)
    ap.add_argument("--heldout", required=True)
    args = ap.parse_args(argv)
    seen, files = set(), set()
    for path in ("corpus.yaml", "heldout.yaml"):
        with open(os.path.join(HERE, path), encoding="utf-8") as f:
            for e in yaml.safe_load(f)["commands"]:
                seen.add(written(e))
                files.add((e["source"]["repo"], e["source"]["path"]))
    parts: dict = {"tuned": [], "heldout": []}
    for path in args.candidates:
        with open(path) as f:
            cands = json.load(f)
        for n, cand in enumerate(c for c in cands if KV.search(json.dumps(c.get("script") or c.get("container")))):
            e = heldout.entry(cand, n)
            if written(e) in seen or (e["source"]["repo"], e["source"]["path"]) in files:
                continue
            seen.add(written(e))
            parts["heldout" if e["source"]["repo"] in HELD_OUT else "tuned"].append(e)
    heads = {"tuned": "# KV-connector launch commands (issue 52 item 3), tuned part: see connectors.py.\n",
             "heldout": "# KV-connector launch commands (issue 52 item 3), held out by repository (connectors.py):\n"
                        "# run only by test_zz_connectors_heldout.py, last; its rate is reported apart.\n"}
    for part, out in (("tuned", args.tuned), ("heldout", args.heldout)):
        ids = [e["id"] for e in parts[part]]
        assert len(set(ids)) == len(ids), part
        with open(out, "w", encoding="utf-8") as f:
            f.write(heads[part] + yaml.safe_dump({"commands": parts[part]}, sort_keys=False, width=1 << 16))
        print(part, len(parts[part]), sorted({e["source"]["repo"] for e in parts[part]}), file=sys.stderr)


if __name__ == "__main__":
    main()
