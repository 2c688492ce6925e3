"""The model decides an argv with an element whose value is not in the Pod spec (a Secret's, a Pod
field's) only where no value could change the parse: `--name=VALUE` of an option that takes any
string, or a word that cannot start with '-'. Held to the real parsers: every such option of a
release, each with values that would matter if anything did ('-x', '--', '', 'a b', a dtype flag),
must get the answer the model gave without knowing the value."""

import os
import sys

import pytest

from kubectl_kvcache.engine import kvparse
from kubectl_kvcache.engine.argv import Token
from kubectl_kvcache.engine.releases import parse_version, profile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_conformance import oracle_answer  # noqa: E402

ANY = ["x", "-x", "--", "", "a b", "--kv-cache-dtype=bogus", "-1", "{}", "None"]
PLAIN = ["pod-0", "10.1.2.3", "fd00::1", "a.b", "0"]       # what a Pod field holds: never '-' first
CASES = [("vllm", "0.10.2", "serve", ["m"]), ("vllm", "0.29.0", "serve", ["m"]), ("vllm", "0.33.0", "serve", ["m"]),
         ("sglang", "0.5.18", "launch_server", ["--model-path", "m"])]


def _model(prof, entry, head, tail):
    """The model's answer for head + tail, where tail's first element has only its prefix known."""
    known = [Token(t, "args", k) for k, t in enumerate(head)]
    hidden = Token(None, "args", len(head), prefix=tail[0], reason="$X comes from Secret s (key k)",
                   plain=tail[0] == "")
    rest = [Token(t, "args", len(head) + 1 + k) for k, t in enumerate(tail[1:])]
    return kvparse.parse(known + [hidden] + rest, prof, entry=entry)


@pytest.mark.parametrize("engine,version,entry,head", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_values_the_model_says_cannot_matter(oracles, engine, version, entry, head):
    prof = profile(engine, parse_version(version))
    oracle = oracles.get(engine, version)
    names = sorted(n for n in kvparse._Parser(prof, entry).table if n.startswith("--") and n != "--config")
    shapes = [([f"{n}=", "--kv-cache-dtype", "fp8"], [f"{n}={v}" for v in ANY]) for n in names]
    shapes += [(["", "--kv-cache-dtype", "fp8"], PLAIN), (["--served-model-name", "", "--kv-cache-dtype", "fp8"],
                                                          PLAIN)]
    if engine == "vllm":     # the model after an option: a served name then makes 0.18+ refuse it
        shapes.append((["--served-model-name=", "m", "--kv-cache-dtype", "fp8"],
                       [f"--served-model-name={v}" for v in ANY]))
    requests, expected = [], []
    decided = 0
    for tail, fills in shapes:
        if tail[0] == "--served-model-name":     # the unknown element is the option's value
            head2, tail2 = head + tail[:1], tail[1:]
        elif tail[1:2] == ["m"]:
            head2, tail2 = [], tail
        else:
            head2, tail2 = head, tail
        mine = _model(prof, entry, head2, tail2)
        if mine.outcome == kvparse.UNKNOWN:
            continue
        decided += 1
        answer = ("ok", mine.effective or "auto") if mine.outcome == kvparse.OK else ("dies", None)
        for fill in fills:
            argv = head2 + [fill] + tail2[1:]
            requests.append({"entry": entry, "argv": argv})
            expected.append((answer, argv, mine.reason))
    assert decided > 20        # the class is exercised: most string options are decided
    wrong = []
    for res, (answer, argv, why) in zip(oracle.ask_many(requests), expected):
        if res["outcome"] == "absent":
            continue
        real = oracle_answer(res)
        if real != answer and not (answer == ("ok", "auto") and real == ("ok", None)):
            wrong.append(f"{argv}: model {answer} ({why}); real {real} {res.get('error', '')[:200]}")
    assert not wrong, f"{engine} {version}: {len(wrong)} wrong:\n" + "\n".join(wrong[:20])
