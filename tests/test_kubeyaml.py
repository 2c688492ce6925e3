"""kubeyaml.load, the PyYAML-free reader of YAML kubeconfigs (issue #16), against PyYAML itself.

Agreement: for any text, load() answers UNSURE or exactly what yaml.load(text, CSafeLoader) returns
(types included: True is not 1, '1' is not 1), and never raises; checked on generated documents
dumped in PyYAML's and go-yaml's layouts, on mutations of them, and on line-level fuzz.
Acceptance, so that the fast path is not vacuous: real kubeconfig shapes are not UNSURE.

The fixtures in tests/kubeyaml/ (certificates and keys are random bytes): kind, eks,
insecure-token, harness (tests/cluster/harness.py's kubeconfig) and minikube were written by
kubectl v1.32 (`kubectl config set-*`, or `kubectl config view --raw` of a JSON document), i.e.
client-go through go-yaml; eks-awscli by PyYAML's safe_dump as `aws eks update-kubeconfig` writes
it; hand-edited by hand (comments, blank lines, indented sequences, quoting).
"""

import base64
import glob
import json
import os
import re
import string
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from kubectl_kvcache import kubeconfig, kubeyaml
from kubectl_kvcache.errors import PluginError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = sorted(glob.glob(os.path.join(HERE, "kubeyaml", "*.yaml")))
UNSURE = kubeyaml.UNSURE


def fixture(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def pyyaml(text):
    return yaml.load(text, Loader=yaml.CSafeLoader)


def same(a, b):
    """Equal, with the same types all the way down and dict keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return [(type(k), k) for k in a] == [(type(k), k) for k in b] and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    return a == b


def agrees(text):
    """load(text) is UNSURE or PyYAML's answer; True when it answered."""
    got = kubeyaml.load(text)
    if got is UNSURE:
        return False
    try:
        want = pyyaml(text)
    except Exception as exc:        # noqa: BLE001 - any refusal by PyYAML
        pytest.fail(f"kubeyaml read {got!r} from {text!r}, which PyYAML refuses: {exc}")
    assert same(got, want), (text, got, want)
    return True


# ---------------------------------------------------------------------------------------- acceptance

def test_the_fixtures_are_there():
    names = {os.path.basename(p) for p in FIXTURES}
    assert {"kind.yaml", "eks.yaml", "eks-awscli.yaml", "insecure-token.yaml", "harness.yaml",
            "minikube.yaml", "hand-edited.yaml"} <= names


@pytest.mark.parametrize("path", FIXTURES, ids=os.path.basename)
def test_real_kubeconfigs_are_read_without_pyyaml_and_as_pyyaml_reads_them(path):
    text = fixture(path)
    got = kubeyaml.load(text)
    assert got is not UNSURE
    assert same(got, pyyaml(text))
    assert got["apiVersion"] == "v1"


def test_the_shapes_the_fixtures_cover():
    docs = {os.path.basename(p): kubeyaml.load(fixture(p)) for p in FIXTURES}
    user = docs["eks.yaml"]["users"][0]["user"]["exec"]
    assert user["args"][:2] == ["--region", "us-west-2"]
    assert user["env"] is None and user["provideClusterInfo"] is False and user["interactiveMode"] == "IfAvailable"
    dev = docs["insecure-token.yaml"]["clusters"][0]["cluster"]
    assert dev["insecure-skip-tls-verify"] is True
    assert docs["insecure-token.yaml"]["users"][1]["user"]["token"].startswith("eyJ")
    assert docs["kind.yaml"]["preferences"] == {}
    assert docs["harness.yaml"]["contexts"][0]["context"]["namespace"] == "default"
    hand = docs["hand-edited.yaml"]
    assert hand["clusters"][1]["cluster"]["insecure-skip-tls-verify"] is True      # `yes`
    assert hand["users"][0]["user"] == {"token": "it's-a-token", "as": None}
    assert hand["users"][1]["user"]["password"] == 'p@ss"word\\'


BOOLS = {w: w.lower() in ("yes", "true", "on")
         for w in "yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF".split()}


@pytest.mark.parametrize("word", sorted(BOOLS))
def test_the_bool_spellings_of_yaml_1_1(word):
    assert same(kubeyaml.load(f"a: {word}\n"), {"a": BOOLS[word]})
    assert agrees(f"- {word}\n- '{word}'\n- \"{word}\"\n")


READ = {
    "": None,
    "{}\n": {},
    "[]": [],
    "a root scalar\n": "a root scalar",
    "# nothing but a comment\n\n   \n": None,
    "a:\nb: ~\nc: null\nd: Null\ne: NULL\n": {"a": None, "b": None, "c": None, "d": None, "e": None},
    "a: y\nb: n\nc: nul\nd: yES\ne: ~x\n": {"a": "y", "b": "n", "c": "nul", "d": "yES", "e": "~x"},
    "args:\n- --region\n- -v\n- --\n": {"args": ["--region", "-v", "--"]},
    "k:\n- a\n- b\nnext: c\n": {"k": ["a", "b"], "next": "c"},
    "k:\n    - a\n    - x: y\n      z: w\n": {"k": ["a", {"x": "y", "z": "w"}]},
    "- - a\n  - b\n- c\n-\n- - - d\n": [["a", "b"], "c", None, [["d"]]],
    "-\n  a: b\n-   c: d\n    e: f\n": [{"a": "b"}, {"c": "d", "e": "f"}],
    "- a:\n  - x\n  b:\n    - y\n": [{"a": ["x"], "b": ["y"]}],
    "a: x\nb: y\na: z\n": {"a": "z", "b": "y"},
    "'it''s': \"say \\\"hi\\\"\"\n\"k\": ''\n": {"it's": 'say "hi"', "k": ""},
    '- "\\\\ \\" \\/ \\n \\t \\r \\0 \\x41 \\u00e9 \\U0001F600"\n': ["\\ \" / \n \t \r \x00 A \u00e9 \U0001F600"],
    "a: {}\nb: []\nc:   {}   \n": {"a": {}, "b": [], "c": {}},
    "a: b:c\nb: b#c\nc: it's\nd: say \"hi\"\ne: https://h:1/p?q=1&r=[2]\nf: é 日本 😀\ng:  spaced   \n":
        {"a": "b:c", "b": "b#c", "c": "it's", "d": 'say "hi"', "e": "https://h:1/p?q=1&r=[2]", "f": "é 日本 😀",
         "g": "spaced"},
    "  a: b\n  c:\n    d: e\n": {"a": "b", "c": {"d": "e"}},
    "a:\n  # a comment inside\n\n  b: c\n# and at the end": {"a": {"b": "c"}},
}


@pytest.mark.parametrize("text", READ, ids=repr)
def test_what_the_subset_reads(text):
    assert same(kubeyaml.load(text), READ[text])
    assert same(READ[text], pyyaml(text))


GKE = """\
users:
- name: gke_project_europe-west1_prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
        https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
      provideClusterInfo: true
"""

LEFT_TO_PYYAML = [
    "a: &x b\nc: *x\n", "a: *x\n", "a: !!str b\n", "a: !t b\n", "a: |\n  x\n", "a: >-\n  x\n",
    "a: b\n  c\n", "a:\n  b\n", "-\n  b\n", "b\nc\n", "a: \"b\n  c\"\n", "a: 'b\n  c'\n", GKE,       # multi-line
    "a: {b: c}\n", "a: [b]\n", "a: { }\n", "? a\n: b\n", "[a]\n", "{a: b}\n",
    "---\na: b\n", "a: b\n...\n", "%YAML 1.1\n---\na: b\n", "--- a\n", "\ufeffa: b\n",
    "a: b\r\n", "a: b\rc: d\n", "a:\tb\n", "\ta: b\n", "a: b\t\n", "a: b\x85c\n", "a: b\u2028c\n", "a: \x01\n",
    "a: b # a comment\n", "a: 'b' # a comment\n", "a: \"b\" c\n", "a: #c\n", "- # c\n",
    "a: 1\n", "a: 1.5\n", "a: 0x1F\n", "a: 017\n", "a: 2024-01-01\n", "a: -1\n", "a: -.5\n", "a: .inf\n",
    "a: +1\n", "a: 1:30\n", "<<: x\n", "a: =\n", "a: ---\n", "a: -\n",
    "true: a\n", "~: a\n", "null: a\n", "1: a\n", "no: a\n", ": a\n", ":\n", "a : b\n",
    'a: "\\e"\n', 'a: "\\ud800"\n', 'a: "\\x4"\n', 'a: "\\x4g"\n', 'a: "\\N"\n', 'a: "b\\\n',
    "a: b: c\n", "a: - b\n", "a: b:\n", "- a\nb: c\n", "a: x\n- b\n", "a:\n  - x\n  b: y\n", "- a\n - b\n",
    "a: b\n c: d\n", "- a: b\n c: d\n", "a:\n    b: c\n  d: e\n", '"a":b\n', '"a" b\n', "a: 'b\n", "a: @x\n",
    "a: `x\n", "a: %x\n", "a: ?x\n", "a: ,x\n", "a: ]x\n", "k" * 200 + ": v\n", "a:\n" + "".join(
        " " * (2 * i) + f"k{i}:\n" for i in range(1, 100)),
]


@pytest.mark.parametrize("text", LEFT_TO_PYYAML, ids=repr)
def test_what_is_left_to_pyyaml(text):
    assert kubeyaml.load(text) is UNSURE


# ---------------------------------------------------------------------------------------- agreement

SAFE_KEY = string.ascii_letters + string.digits + "-._/"
TRICKY = [
    "true", "True", "no", "NO", "on", "Off", "y", "n", "~", "null", "Null", "", " ", "1", "1.5", "0x1F", "017",
    "1_000", "1:30", "2024-01-01", "2001-12-14t21:59:43.10-05:00", ".inf", "-.5", "+1", "-1", "=", "<<",
    "a: b", "a:", ":a", "a:b", "x #y", "x#y", "#x", " lead", "trail ", "--region", "-x", "-", "--", "---", "...",
    "- a", "? a", "'q'", '"q"', "it's", 'say "hi"', "back\\slash", "tab\tin", "new\nline", "two\n\nlines", "cr\r",
    "nul\x00", "del\x7f", "nel\x85", "ls\u2028", "bom\ufeff", "é", "日本語", "😀", "\xa0nbsp", "[a]", "{a}", "a,b",
    "&a", "*a", "!a", "|", ">", "%a", "@a", "`a", "https://10.0.0.1:6443", "arn:aws:eks:us-west-2:1:cluster/x",
    "client.authentication.k8s.io/v1beta1", "IfAvailable", "a " * 50,
]
base64s = st.binary(min_size=50, max_size=400).map(lambda b: base64.b64encode(b).decode())

# what real kubeconfigs hold: the fast path must read all of it
words = st.text(SAFE_KEY, min_size=1, max_size=12).filter(lambda s: s[0].isalpha())
pems = st.binary(max_size=400).map(lambda b: base64.b64encode(b"-----BEGIN CERTIFICATE-----\n" + b).decode())
plain_values = st.one_of(st.booleans(), st.none(), words, pems, st.just(""),
                         st.sampled_from(["--region", "--cluster-name", "https://10.0.0.1:6443", "a:b", "a:",
                                          "arn:aws:eks:us-west-2:1:cluster/x", "Mon, 01 Jan 2024 10:00:00 UTC"]))
plain_trees = st.recursive(plain_values, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                                st.dictionaries(words, kids, max_size=5)),
                           max_leaves=24)
kubeconfigs = st.dictionaries(words, plain_trees, max_size=6)
scalars = st.one_of(plain_values, st.sampled_from(TRICKY), base64s,
                    st.text(SAFE_KEY + " :#'\"\\-", max_size=12), st.text(max_size=8))
keys = st.one_of(st.text(SAFE_KEY, min_size=1, max_size=16), st.sampled_from(TRICKY),
                 st.sampled_from([True, False, None]))
values = st.recursive(scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                      st.dictionaries(keys, kids, max_size=5)), max_leaves=24)
documents = st.dictionaries(keys, values, max_size=6)



class IndentedSequences(yaml.SafeDumper):
    """PyYAML indenting a mapping's sequences (`key:\\n  - item`) instead of its default `key:\\n- item`."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


WIDE = 1 << 20
PYYAML_STYLES = [
    dict(),
    dict(indent=4),
    dict(sort_keys=False, width=WIDE, allow_unicode=True),
    dict(width=WIDE),
    dict(indent=4, sort_keys=False, width=WIDE, allow_unicode=True),
    dict(Dumper=IndentedSequences, width=WIDE),
    dict(Dumper=IndentedSequences, indent=4, allow_unicode=True),
]
GO_WORDS = set(BOOLS) | {"~", "null", "Null", "NULL"}
GO_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9._/@+=-]*(?::[A-Za-z0-9._/@+=-]+)*")


def pyyaml_dump(doc, style):
    style = dict(style)
    dumper = style.pop("Dumper", yaml.SafeDumper)
    return yaml.dump(doc, Dumper=dumper, default_flow_style=False, explicit_start=False, **style)


def go_dump(doc, reckless=False):
    """go-yaml v2's block layout, as kubectl writes kubeconfigs: two spaces a level, a mapping's
    sequences at the key's own column, `{}`, `[]`, `null`; a string plain where go-yaml writes it
    plain, else double-quoted. reckless: every one-line string plain, to try the resolution."""

    def scalar(v):
        if v is None or isinstance(v, bool):
            return {None: "null", True: "true", False: "false"}[v]
        if reckless and v and "\n" not in v:
            return v
        if GO_PLAIN.fullmatch(v) and v not in GO_WORDS:
            return v
        return json.dumps(v, ensure_ascii=False)

    def inline(v):
        return ("{}" if isinstance(v, dict) else "[]") if v in ({}, []) and not isinstance(v, bool) else scalar(v)

    def block(v, col):
        pad, out = " " * col, []
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, (dict, list)) and x:
                    out.append(f"{pad}{scalar(k)}:")
                    out += block(x, col + 2 if isinstance(x, dict) else col)
                else:
                    out.append(f"{pad}{scalar(k)}: {inline(x)}")
        else:
            for x in v:
                if isinstance(x, (dict, list)) and x:
                    sub = block(x, col + 2)
                    out += [f"{pad}- {sub[0][col + 2:]}"] + sub[1:]
                else:
                    out.append(f"{pad}- {inline(x)}")
        return out

    return "\n".join(block(doc, 0)) + "\n" if doc else "{}\n"


def dumps(doc):
    return [pyyaml_dump(doc, s) for s in PYYAML_STYLES] + [go_dump(doc), go_dump(doc, reckless=True)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_any_document_in_any_layout_is_read_as_pyyaml_reads_it_or_left_to_it(doc):
    for text in dumps(doc):
        agrees(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kubeconfigs)
def test_kubeconfig_like_documents_are_read_in_every_wide_layout(doc):
    wide = [pyyaml_dump(doc, s) for s in PYYAML_STYLES if s.get("width") == WIDE] + [go_dump(doc)]
    for text in wide:
        assert agrees(text), text


NOISE = list(" -:#'\"\t\r\n{}[]&*!|>?%@`\\~,.0a\ufeff\u2028é")
COMMENTS = ["#", "# note", "#x: y", "# - a", "#   key: 'v"]


@st.composite
def mutated(draw, texts):
    text = draw(texts)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete", "comment", "blank", "indent", "truncate", "repeat"]))
        lines = text.split("\n")
        n = draw(st.integers(0, len(lines) - 1))
        if op == "insert":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(NOISE)) + text[at:]
        elif op == "delete" and text:
            at = draw(st.integers(0, len(text) - 1))
            text = text[:at] + text[at + 1:]
        elif op == "truncate":
            text = text[:draw(st.integers(0, len(text)))]
        else:
            if op == "comment":
                lines.insert(n, " " * draw(st.integers(0, 8)) + draw(st.sampled_from(COMMENTS)))
            elif op == "blank":
                lines.insert(n, " " * draw(st.integers(0, 8)))
            elif op == "repeat":
                lines.insert(n, lines[n])
            elif draw(st.booleans()):
                lines[n] = " " * draw(st.integers(1, 3)) + lines[n]
            else:
                lead = len(lines[n]) - len(lines[n].lstrip(" "))
                lines[n] = lines[n][min(lead, draw(st.integers(1, 3))):]
            text = "\n".join(lines)
    return text


small_values = st.recursive(scalars, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                            st.dictionaries(keys, kids, max_size=3)), max_leaves=8)
small_documents = st.dictionaries(keys, small_values, max_size=4)
sources = st.one_of(st.sampled_from([fixture(p) for p in FIXTURES]),
                    st.tuples(small_documents, st.sampled_from(range(len(PYYAML_STYLES) + 2))).map(
                        lambda d: dumps(d[0])[d[1]]))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(sources))
def test_mutated_documents_are_read_as_pyyaml_reads_them_or_left_to_it(text):
    agrees(text)


KEYS = ["a", "b", "name", "'q'", '"d"', "-x", "on", "~", "a b", "1", "k.y/z", "'it''s'", '"\\u00e9"']
VALUES = ["", "x", "y z", "true", "no", "~", "{}", "[]", "'s'", '"d"', "''", '"\\t\\x41"', "--r", "1", "a: b", "x #c",
          "#c", "- x", "&a x", "*a", "|", ">", "!t x", "'un", '"un', "[a]", "a:", "x  ", "é"]
PREFIXES = ["", "", "", "- ", "-  ", "- - ", "-   - "]
lines = st.builds(lambda indent, prefix, key, value: " " * indent + prefix + (
                      value if key is None else key + ":" + (" " + value if value else "")),
                  st.integers(0, 6), st.sampled_from(PREFIXES), st.one_of(st.none(), st.sampled_from(KEYS)),
                  st.sampled_from(VALUES))


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.one_of(lines, st.sampled_from(["", "  # c", "-", "  -"])), min_size=1, max_size=8))
def test_line_level_fuzz_is_read_as_pyyaml_reads_it_or_left_to_it(parts):
    agrees("\n".join(parts) + "\n")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=" -:#'\"\n\tab{}[]~\\.0ty&*!|>?", max_size=60) | st.text(max_size=40))
def test_arbitrary_text_never_raises(text):
    agrees(text)


# ---------------------------------------------------------------------------------------- kubeconfig

READ_IN_A_FRESH_PROCESS = (
    "import json, sys\n"
    "from kubectl_kvcache import kubeconfig\n"
    "doc = kubeconfig._read(sys.argv[1])\n"
    "print(json.dumps([doc, sorted(m for m in sys.modules if m == 'yaml' or m.startswith('yaml.'))]))\n")


def read_in_a_fresh_process(path):
    out = subprocess.run([sys.executable, "-c", READ_IN_A_FRESH_PROCESS, path], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    return json.loads(out)


@pytest.mark.parametrize("name", ["kind.yaml", "eks.yaml", "hand-edited.yaml"])
def test_a_yaml_kubeconfig_is_read_without_importing_yaml(name):
    path = os.path.join(HERE, "kubeyaml", name)
    doc, yaml_modules = read_in_a_fresh_process(path)
    assert yaml_modules == []
    assert doc == pyyaml(fixture(path))


def test_a_kubeconfig_outside_the_subset_is_still_read_by_pyyaml(tmp_path):
    path = tmp_path / "config"
    path.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster: &shared\n"
                    "    server: https://a:6443\n    insecure-skip-tls-verify: true\n"
                    "- name: b\n  cluster: *shared\nusers:\n- name: u\n  user:\n    token: t  # the dev token\n")
    doc, yaml_modules = read_in_a_fresh_process(str(path))
    assert "yaml" in yaml_modules
    assert doc == pyyaml(path.read_text())
    assert doc["clusters"][1]["cluster"]["server"] == "https://a:6443"
    assert same(kubeconfig._read(str(path)), pyyaml(path.read_text()))


def test_a_kubeconfig_that_is_not_utf8_goes_to_pyyaml_and_its_error(tmp_path):
    path = tmp_path / "config"
    path.write_bytes(b"apiVersion: v1\nkind: \xff\n")
    with pytest.raises(PluginError, match=r"kubeconfig .*config: not valid YAML"):
        kubeconfig._read(str(path))


def test_importing_kubeyaml_loads_nothing_else():
    code = "import sys; before = set(sys.modules)\nimport kubectl_kvcache.kubeyaml\n" \
           "print(' '.join(sorted(set(sys.modules) - before)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert set(out.stdout.split()) == {"kubectl_kvcache", "kubectl_kvcache.kubeyaml"}
