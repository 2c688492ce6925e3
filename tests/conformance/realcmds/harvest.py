"""Find launch-command candidates in a fetched git mirror (a maintainer's tool, not run by tests).

    python harvest.py MIRROR_GIT_DIR OWNER/NAME > candidates.json

Kubernetes manifests and docker-compose files: every container / service whose command or args
start or name vLLM or SGLang; Markdown, reStructuredText and shell files: every `vllm serve`,
`python -m vllm.entrypoints.openai.api_server`, `python -m sglang.launch_server`, `sglang serve`
line with its backslash continuations. Files holding Helm template expressions are left out
(they are not what a Pod runs until rendered). The candidates are reviewed by hand before they go
into corpus.yaml; only the launch command itself is kept.
"""

import json
import re
import subprocess
import sys

import yaml

ENGINE = re.compile(r"(vllm serve|vllm\.entrypoints\.openai\.api_server|sglang\.launch_server|sglang serve|"
                    r"\bvllm\b|\bsglang\b)")
LINE = re.compile(r"(^|[\s;&|(`\"'])(exec\s+)?((\S*/)?(python3?(\.\d+)?\s+-m\s+(vllm\.entrypoints\.openai\.api_server|"
                  r"sglang\.launch_server)|vllm\s+serve|sglang\s+serve)\b)")


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], capture_output=True, text=True, check=True).stdout


def line_of(text, needle):
    i = text.find(needle)
    return text.count("\n", 0, i) + 1 if i >= 0 else None


def containers(doc):
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for c in value:
                    if isinstance(c, dict):
                        yield "container", c
            elif key == "services" and isinstance(value, dict):
                for name, svc in value.items():
                    if isinstance(svc, dict) and ("command" in svc or "entrypoint" in svc):
                        yield "compose", dict(svc, name=name)
            yield from containers(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from containers(item)


def from_yaml(text):
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return
    for doc in docs:
        for kind, c in containers(doc):
            words = json.dumps([c.get("command"), c.get("args"), c.get("image"), c.get("entrypoint")])
            if not ENGINE.search(words):
                continue
            keep = {k: c[k] for k in ("name", "image", "command", "args", "entrypoint") if k in c}
            env = c.get("env") or c.get("environment")
            if env:
                keep["env"] = env
            yield kind, keep


def from_text(text):
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if LINE.search(lines[i]):
            start = i
            chunk = [lines[i]]
            while chunk[-1].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                chunk.append(lines[i])
            yield start + 1, "\n".join(chunk)
        i += 1


def main(gitdir, repo):
    commit = git(gitdir, "rev-parse", "HEAD").strip()
    out = []
    for path in git(gitdir, "ls-tree", "-r", "--name-only", "HEAD").split("\n"):
        if not re.search(r"\.(ya?ml|md|rst|sh|txt|mdx)$", path):
            continue
        try:
            text = git(gitdir, "show", f"HEAD:{path}")
        except (subprocess.CalledProcessError, UnicodeDecodeError):
            continue
        if not ENGINE.search(text):
            continue
        src = {"repo": repo, "path": path, "commit": commit}
        if path.endswith((".yaml", ".yml")):
            if "{{" in text:
                continue
            for kind, c in from_yaml(text):
                first = (c.get("command") or c.get("args") or [""])
                needle = first if isinstance(first, str) else (first[0] if first else "")
                out.append({"source": dict(src, line=line_of(text, str(needle).split("\n")[0])), "form": kind,
                            "container": c})
        else:
            for line, chunk in from_text(text):
                out.append({"source": dict(src, line=line), "form": "shell", "script": chunk})
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
