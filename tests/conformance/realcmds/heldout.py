"""Turn harvest.py's candidates into held-out corpus entries (a maintainer's tool, not run by tests).

    python heldout.py CANDIDATES.json [...] --per-repo 40 > heldout.yaml

The held-out corpus (issue 38 item 3) is read from repositories corpus.yaml does not use and is
never tuned on: test_zz_heldout.py runs it last and reports its rate apart. Entries are taken as
harvested, not reviewed one by one (a review is tuning): each candidate's launch command as
written, its engine from the words of the command, every `per-repo`-th one kept so each
repository's share is bounded and spread over its files.
"""

import argparse
import json
import re
import sys

import yaml

SGLANG = re.compile(r"sglang\.launch_server|sglang\s+serve|\bsglang\b")


def engine_of(text):
    return "sglang" if SGLANG.search(text) else "vllm"


def entry(cand, n):
    src = cand["source"]
    base = re.sub(r"[^a-z0-9]+", "-", src["path"].lower().rsplit(".", 1)[0]).strip("-")[-40:]
    out = {"id": f"{src['repo'].split('/')[1].lower()}.{base}.{n}"}
    if cand["form"] == "shell":
        line = "\n".join(x.rstrip() for x in cand["script"].strip().splitlines())
        out.update(engine=engine_of(line), form="shell-line", line=line)
    else:
        body = cand.get("container") or cand
        out.update(engine=engine_of(json.dumps(body)), form=cand["form"])
        for k in ("image", "command", "args", "entrypoint", "env", "environment"):
            if body.get(k) is not None:
                out["env" if k == "environment" else k] = body[k]
    out["source"] = {k: src[k] for k in ("repo", "path", "commit", "line")}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("candidates", nargs="+")
    ap.add_argument("--per-repo", type=int, default=40)
    args = ap.parse_args(argv)
    entries, seen = [], set()
    for path in args.candidates:
        with open(path) as f:
            cands = json.load(f)
        step = max(1, len(cands) // args.per_repo)
        for n, cand in enumerate(cands[::step][:args.per_repo]):
            e = entry(cand, n)
            key = json.dumps({k: v for k, v in e.items() if k not in ("id", "source")}, sort_keys=True)
            if key not in seen:
                seen.add(key)
                entries.append(e)
    head = ("# Held-out launch commands (issue 38 item 3): repositories corpus.yaml does not use, taken as\n"
            "# harvested (harvest.py, then heldout.py) and never tuned on; test_zz_heldout.py runs them last\n"
            "# and reports their rate apart.\n")
    sys.stdout.write(head + yaml.safe_dump({"commands": entries}, sort_keys=False, width=1 << 16))


if __name__ == "__main__":
    main()
