"""kubectl_kvcache.engine.launch: a `sh -c` script the kubelet pastes Pod field values into
($(POD_NAME) in the script text), held to real shells."""

import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_kvcache.engine.argv import Token, container_environment, script_template
from kubectl_kvcache.engine.launch import _script_token
from kubectl_kvcache.engine.shell import parse_script

REAL_SHELLS = [s for s in ("dash", "bash") if shutil.which(s)]
ENV = container_environment([{"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                             {"name": "A", "value": "a b"}], ())
_PART = st.sampled_from(["$(P)", "x$(P)", "--n=$(P)", "'$(P)'", '"$(P)"', '"$A$(P)"', "${A:-$(P)}", "\\$(P)",
                         "$(P).svc", "a", "--x", "$A", "'q r'", "$$(P)", "$(P)$(P)", "{a,b}$(P)", "$A$(P)",
                         "$(P)>/dev/null", "~$(P)", "$(P)=1"])
_WORD = st.lists(_PART, min_size=1, max_size=3).map("".join)
_DNS = st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,8}[a-z0-9])?", fullmatch=True)


def kubelet_expand(text, value):
    """What the kubelet runs: $(P) replaced by the value, $$ by $ (argv.expand's rules)."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(P)", i):
            out.append(value)
            i += 4
        elif text.startswith("$(A)", i):
            out.append("a b")
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


@pytest.mark.skipif(not REAL_SHELLS, reason="no dash or bash on this machine")
@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORD, min_size=1, max_size=4), value=_DNS, shell=st.sampled_from(REAL_SHELLS or ["sh"]))
def test_pasted_field_values_agree_with_real_shells(words, value, shell, tmp_path_factory):
    element = "printf '%s\\0' " + " ".join(words)
    template = script_template(element, ENV)
    if template is None:        # refused: the script stays UNKNOWN
        return
    script, holes = template
    real = subprocess.run([shell, "-c", kubelet_expand(element, value)], capture_output=True, check=False,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "A": "a b"}, timeout=10,
                          cwd=tmp_path_factory.getbasetemp())
    result = parse_script(script, ENV.for_shell())
    if result.unknown or real.returncode:
        return
    got = real.stdout.decode().split("\0")[:-1]
    where = Token(None, "command", 2)
    model = [(_script_token(w, where, holes), w.may_split) for w in result.commands[0].words[2:]]
    j = 0
    for tok, may_split in model:
        if may_split:
            return
        assert j < len(got), (element, got)
        if tok.text is not None:
            assert got[j] == tok.text, (element, got, tok)
        else:
            assert got[j].startswith(tok.prefix), (element, got, tok)
            if tok.plain:
                assert not got[j].startswith("-"), (element, got, tok)
        j += 1
    assert j == len(got), (element, got, model)


@pytest.mark.parametrize("element", ["$A$(P)", "x$$(P)", "${$(P)}", "echo $(P)>f", "$(Q)"])
def test_holes_refused_where_the_value_could_change_the_parse(element):
    env = container_environment([{"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                 {"name": "Q", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}], ())
    assert script_template(element, env) is None
