"""What each release does with a --chat-template value, read statically (ast) from its own code.

    scripts/engine-data --templates [--write]

Why (issue 52 item 2): a value is a template in the argv, a name of a template the release ships
or registers, or a path; only the last needs a file, and whether that file is there only the image
or a volume mounted into it can tell. Read, per release:

- vLLM: the loader (`_load_chat_template` of serving_chat.py up to 0.5.2, `_load_chat_template` /
  `load_chat_template` / `validate_chat_template` of entrypoints/chat_utils.py, later
  renderers/chat_utils/chat_template.py): "literal": "any" where a value that opens no file is
  taken as the template itself (0.3.3-0.4.0.post1: `codecs.decode(value, "unicode_escape")` after
  the OSError), "jinja" where only a value holding one of JINJA_CHARS (`{`, `}`, a newline) is;
  "names": the built-in templates, where the loader looks the value up in CHAT_TEMPLATES_DIR
  (`CHAT_TEMPLATES_DIR / chat_template`): the `.jinja` files registry.py names with
  CHAT_TEMPLATES_DIR (only those are known to be in the package: the wheel cache keeps .py files);
  "when": "after parsing" where validate_parsed_serve_args calls validate_chat_template(args...)
  (the value is checked before the engine starts), else "at start-up" (the loader, when the
  server is built).
- SGLang: the template manager (openai_api/adapter.py load_chat_template_for_openai_api, later
  managers/ or parser/template_manager.py) takes a value `chat_template_exists` finds (a name
  registered with register_conv_template(Conversation(name=...)) in conversation.py) before it
  looks for a file, and raises "is not a built-in template name or a valid chat template file
  path" otherwise, at start-up; no value is taken as the template itself ("literal": "").

Writes kubectl_kvcache/engine/templates.json: {engine: [[{"literal", "names", "when", "source"},
first release, first release after (null: on)]]}, one span per run of releases that read alike.
"""

from __future__ import annotations

import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generated  # noqa: E402
import wheels  # noqa: E402
from releases import RELEASES  # noqa: E402

LOADERS = ("_load_chat_template", "load_chat_template", "validate_chat_template")


def _py_files(root, top):
    for base, _, files in os.walk(os.path.join(root, top)):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, root), f.read()


def _functions(tree, names):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names]


def _strings(node):
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def vllm_release(root):
    loaders, called_after_parse, registry = [], False, None
    for rel, text in _py_files(root, "vllm"):
        if not any(f"def {n}(" in text for n in LOADERS) and "validate_chat_template(args" not in text \
                and not rel.endswith("chat_templates/registry.py"):
            continue
        tree = ast.parse(text, rel)
        if rel.endswith("chat_templates/registry.py"):
            registry = tree
        found = _functions(tree, LOADERS)
        # only module-level loaders and the serving class's own: not the request handlers' checks
        found = [f for f in found if f.name != "validate_chat_template" or f.args.args[:1] and
                 f.args.args[0].arg != "self"]
        if found:
            loaders.append((rel, found))
        if re.search(r"validate_chat_template\(args\.chat_template\)", text):
            called_after_parse = True
    literal, builtin, source = "", False, []
    for rel, found in loaders:
        for f in found:
            body = ast.unparse(f)
            strings = _strings(f)
            if "{}\n" in strings or "JINJA_CHARS" in body:
                literal = literal or "jinja"
            elif "unicode_escape" in strings and "OSError" in body:
                literal = "any"
            if "CHAT_TEMPLATES_DIR / chat_template" in body:
                builtin = True
        source.append(rel)
    names: list = []
    if builtin and registry is not None:
        names = sorted({n.right.value for n in ast.walk(registry) if isinstance(n, ast.BinOp)
                        and isinstance(n.op, ast.Div) and isinstance(n.left, ast.Name)
                        and n.left.id == "CHAT_TEMPLATES_DIR" and isinstance(n.right, ast.Constant)
                        and isinstance(n.right.value, str) and n.right.value.endswith(".jinja")})
    return {"literal": literal, "names": names, "when": "after parsing" if called_after_parse else "at start-up",
            "source": sorted(set(source))}


def sglang_release(root):
    names, source = set(), []
    for rel, text in _py_files(root, "sglang/srt"):
        if not rel.endswith("conversation.py") or "def chat_template_exists" not in text:
            continue
        source.append(rel)
        for node in ast.walk(ast.parse(text, rel)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id == "register_conv_template" and node.args and isinstance(node.args[0], ast.Call):
                for kw in node.args[0].keywords:
                    if kw.arg == "name" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        names.add(kw.value.value)
    return {"literal": "", "names": sorted(names), "when": "at start-up", "source": source}


def generate(releases=RELEASES) -> dict:
    data: dict = {}
    for engine, versions in releases.items():
        read = vllm_release if engine == "vllm" else sglang_release
        spans: list = []
        for version in versions:
            root = wheels.cached(engine, version)
            if root is None:
                raise SystemExit(f"{engine} {version} is not cached: run scripts/engine-wheels")
            value = read(root)
            if spans and spans[-1][0] == value:
                continue
            if spans:
                spans[-1][2] = version
            spans.append([value, version, None])
        data[engine] = spans
    return data


def main(argv) -> int:
    text = generated.render(generate(), "scripts/engine-data --templates --write", expand=1)
    return generated.write_or_compare(argv, "templates", text, "scripts/engine-data --templates")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
