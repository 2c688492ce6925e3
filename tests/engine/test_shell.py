"""kubectl_kvcache.shell: a shell -c script's words as the shell itself would produce them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_kvcache.engine.shell import (
    _INTERNAL,
    ScriptResult,
    ShellInvocation,
    SimpleCommand,
    Word,
    parse_script,
    shell_invocation,
)

U = None  # an unknown word in the expected lists below


def texts(script, env=None, positional=()):
    """[[word text or None, ...] per command], and the script-level unknown reason."""
    r = parse_script(script, env or {}, positional)
    return [[w.text for w in c.words] for c in r.commands], r.unknown


def words(script, env=None, positional=(), index=0):
    return parse_script(script, env or {}, positional).commands[index].words


# --- shell_invocation -------------------------------------------------------------------------

@pytest.mark.parametrize("argv, script, index, positional", [
    (["/bin/sh", "-c", "x"], "x", 2, ()),
    (["sh", "-c", "x", "name"], "x", 2, ("name",)),
    (["bash", "-lc", "x", "name", "a"], "x", 2, ("name", "a")),
    (["bash", "-o", "pipefail", "-c", "x"], "x", 4, ()),
    (["bash", "-euo", "pipefail", "-c", "x", "n"], "x", 4, ("n",)),
    (["/usr/bin/bash", "-l", "-c", "x"], "x", 3, ()),
    (["bash", "--login", "-c", "x"], "x", 3, ()),
    (["bash", "--rcfile", "/f", "-c", "x"], "x", 4, ()),
    (["sh", "-xec", "x"], "x", 2, ()),
    (["sh", "-euxc", "x"], "x", 2, ()),
    (["sh", "+x", "-c", "x"], "x", 3, ()),
    (["bash", "-c", "-e", "x"], "x", 3, ()),  # options may follow -c
    (["sh", "-c", "--", "x", "a"], "x", 3, ("a",)),
    (["dash", "-c", "x"], "x", 2, ()),
    (["zsh", "-c", "x"], "x", 2, ()),
    (["sh", "-c"], "", 2, ()),
    (["sh", "-c", ""], "", 2, ()),
])
def test_shell_invocation(argv, script, index, positional):
    inv = shell_invocation(argv)
    assert (inv.script, inv.script_index, inv.positional) == (script, index, positional)


def test_shell_invocation_keeps_options():
    assert shell_invocation(["bash", "-lo", "pipefail", "-c", "x"]).options == ("-lo", "pipefail", "-c")


@pytest.mark.parametrize("argv", [
    ["sh", "script.sh"], ["bash", "-l", "script.sh"], ["sh"], ["bash", "-e"], ["python3", "-c", "x"],
    ["shx", "-c", "x"], ["/bin/fish", "-c", "x"], [], [""], ["sh", "+c", "x"], ["sh", "-o", "-c"],
])
def test_not_a_shell_invocation(argv):
    assert shell_invocation(argv) is None


# --- the examples of the brief ----------------------------------------------------------------

def test_exec_with_quoted_variable():
    cmds, unknown = texts('exec vllm serve m --kv-cache-dtype "$DTYPE"', {"DTYPE": "fp8"})
    assert cmds == [["exec", "vllm", "serve", "m", "--kv-cache-dtype", "fp8"]]
    assert unknown is None


SGLANG = 'set -e; cd /app && exec python3 -m sglang.launch_server --kv-cache-dtype ${D:-fp8_e5m2} "$@"'


@pytest.mark.parametrize("env, dtype", [
    ({}, U),  # D absent: the image may set it
    ({"D": None}, U),  # D from a Secret
    ({"D": ""}, "fp8_e5m2"),
    ({"D": "auto"}, "auto"),
])
def test_default_expansion_with_positional(env, dtype):
    cmds, unknown = texts(SGLANG, env, ("sh", "--port", "30000"))
    assert unknown is None
    assert cmds == [["set", "-e"], ["cd", "/app"],
                    ["exec", "python3", "-m", "sglang.launch_server", "--kv-cache-dtype", dtype,
                     "--port", "30000"]]


def test_default_without_colon_keeps_empty():
    assert texts('x ${D-x} "${D-x}" ${U-u}', {"D": ""})[0] == [["x", "", U]]  # U: the image may set it


def test_unquoted_known_expansion_splits():
    cmds, _ = texts("vllm serve m $EXTRA", {"EXTRA": "--kv-cache-dtype fp8 --port 1"})
    assert cmds == [["vllm", "serve", "m", "--kv-cache-dtype", "fp8", "--port", "1"]]


@pytest.mark.parametrize("env", [{}, {"EXTRA": None}])
def test_unquoted_unknown_expansion_may_split(env):
    w = words("vllm serve m $EXTRA", env)[-1]
    assert w.text is None and w.may_split and "may split" in w.reason and w.raw == "$EXTRA"
    assert "$EXTRA" in w.reason


def test_quoted_unknown_expansion_is_one_word():
    w = words('vllm --kv-cache-dtype "$D"', {})[-1]
    assert w == Word(None, "$D is not set in the Pod spec (the image may set it)", '"$D"')
    assert "valueFrom" in words('v "$D"', {"D": None})[-1].reason


# --- quoting ----------------------------------------------------------------------------------

@pytest.mark.parametrize("script, expected", [
    ("echo 'a b' 'x\"$A'", ["echo", "a b", 'x"$A']),
    ('echo "a b" "$A" "${A}x"', ["echo", "a b", "v", "vx"]),
    (r'echo "a\"b" "c\\d" "e\$f" "g\`h" "i\j"', ["echo", 'a"b', "c\\d", "e$f", "g`h", "i\\j"]),
    (r"echo a\ b \$A \'x \\", ["echo", "a b", "$A", "'x", "\\"]),
    ("echo --kv-cache-dtype=\"fp8\" '--kv-cache-dtype'=fp8 a'b'\"c\"$A",
     ["echo", "--kv-cache-dtype=fp8", "--kv-cache-dtype=fp8", "abcv"]),
    (r"echo $'a\tb\n' $'it\'s'", ["echo", "a\tb\n", "it's"]),
    (r"echo $'\x41'", ["echo", U]),
    ('echo $"hello"', ["echo", U]),
    ('echo "" \'\' x""', ["echo", "", "", "x"]),
    ("echo $ a$ \"$\" $/", ["echo", "$", "a$", "$", "$/"]),
    ('echo "$\'x\'"', ["echo", "$'x'"]),
])
def test_quoting(script, expected):
    assert texts(script, {"A": "v"})[0] == [expected]


def test_raw_is_the_source_text():
    assert [w.raw for w in words("echo --kv-cache-dtype=\"$A\" 'x y'", {"A": "v"})] == [
        "echo", '--kv-cache-dtype="$A"', "'x y'"]


# --- comments and continuations ---------------------------------------------------------------

@pytest.mark.parametrize("script, expected", [
    ("# only a comment", []),
    ("vllm serve m # --kv-cache-dtype fp8", [["vllm", "serve", "m"]]),
    ("echo a#b '#c' \"#d\" \\#e", [["echo", "a#b", "#c", "#d", "#e"]]),
    ("echo a;#b\necho c", [["echo", "a"], ["echo", "c"]]),
    ("vllm serve m \\\n  --kv-cache-dtype fp8", [["vllm", "serve", "m", "--kv-cache-dtype", "fp8"]]),
    ("echo ab\\\ncd", [["echo", "abcd"]]),
    ("echo 'a\\\nb'", [["echo", "a\\\nb"]]),
    ('echo "a\\\nb"', [["echo", "ab"]]),
    ("echo a # comment \\\necho b", [["echo", "a"], ["echo", "b"]]),
])
def test_comments_and_continuations(script, expected):
    assert texts(script) == (expected, None)


# --- separators -------------------------------------------------------------------------------

def test_separators_and_flags():
    r = parse_script("a; b && c || d | e & f |& g\nh", {})
    flags = [(c.words[0].text, c.background, c.in_pipeline, c.conditional) for c in r.commands]
    assert flags == [
        ("a", False, False, False),
        ("b", True, False, False),
        ("c", True, False, True),
        ("d", True, True, True),
        ("e", True, True, True),
        ("f", False, True, False),
        ("g", False, True, False),
        ("h", False, False, False),
    ]
    assert r.unknown is None


def test_separators_without_spaces_and_newline_after_operator():
    assert texts("a&&b;c||d\ne |\n f &&\n\n g") == (
        [["a"], ["b"], ["c"], ["d"], ["e"], ["f"], ["g"]], None)


def test_all_commands_are_reported():
    cmds, _ = texts("set -eux; cd /app; echo start; true; :; export A=1; exec vllm serve")
    assert [c[0] for c in cmds] == ["set", "cd", "echo", "true", ":", "export", "exec"]


@pytest.mark.parametrize("script", ["&& a", "a &&", "a | | b", "a ;; b", "; a", "a >"])
def test_syntax_errors_make_the_script_unknown(script):
    assert "syntax error" in texts(script)[1]


# --- redirections -----------------------------------------------------------------------------

@pytest.mark.parametrize("redirection", [
    ">f", "> f", "2>&1", ">>f", "<f", "&>f", "&>>f", "2>/dev/null", "1>&2", "<<<word", "<<< 'a b'",
    ">|f", "<>f", ">&-", '> "$LOG"', ">$(date).log",
])
def test_redirections_are_removed(redirection):
    assert texts(f"vllm {redirection} serve {redirection}") == ([["vllm", "serve"]], None)


def test_redirection_only_command():
    assert texts(">/tmp/x; exec 2>&1; vllm") == ([[], ["exec"], ["vllm"]], None)


@pytest.mark.parametrize("script", [
    "cat <<EOF >/c.yaml\nkv-cache-dtype: $D\nEOF\nvllm serve --config /c.yaml",
    "cat <<'EOF'\n$x\n  EOF\nEOF\nvllm serve --config /c.yaml",
    "cat <<-EOF\n\tbody\n\tEOF\nvllm serve --config /c.yaml",
])
def test_here_document_makes_the_script_unknown(script):
    cmds, unknown = texts(script)
    assert "here-document" in unknown
    assert cmds == [["cat"], ["vllm", "serve", "--config", "/c.yaml"]]  # the body is skipped


# --- wrappers stay words ----------------------------------------------------------------------

def test_wrappers_are_left_to_the_caller():
    cmds, _ = texts("exec env A=1 nohup numactl -N0 tini -- vllm serve")
    assert cmds == [["exec", "env", "A=1", "nohup", "numactl", "-N0", "tini", "--", "vllm", "serve"]]


# --- parameter expansion ----------------------------------------------------------------------

ENV = {"SET": "v", "EMPTY": "", "SECRET": None, "SP": "a  b"}


@pytest.mark.parametrize("expr, expected", [
    ("$SET", ["v"]), ("${SET}", ["v"]), ("${SET}x", ["vx"]), ("$SET.x", ["v.x"]),
    ("${SET:-d}", ["v"]), ("${EMPTY:-d}", ["d"]), ("${UNSET_IN_SCRIPT:-d}", ["d"]),
    ("${SET-d}", ["v"]), ("${EMPTY-d}", []), ('"${EMPTY-d}"', [""]), ("${UNSET_IN_SCRIPT-d}", ["d"]),
    ("${SET:+alt}", ["alt"]), ("${EMPTY:+alt}", []), ("${EMPTY+alt}", ["alt"]),
    ("${UNSET_IN_SCRIPT+alt}", []), ('"${UNSET_IN_SCRIPT+alt}"', [""]),
    ("${EMPTY:-a b}", ["a", "b"]), ('"${EMPTY:-a b}"', ["a b"]), ('${EMPTY:-"a b"}', ["a b"]),
    ("${EMPTY:-$SP}", ["a", "b"]), ('"${EMPTY:-$SP}"', ["a  b"]), ("${EMPTY:-${SET}}", ["v"]),
    ("${SET:?msg}", ["v"]), ("${EMPTY}", []), ('"$EMPTY"', [""]),
])
def test_parameter_expansion(expr, expected):
    script = "unset UNSET_IN_SCRIPT; echo " + expr
    assert texts(script, ENV)[0][1] == ["echo"] + expected


@pytest.mark.parametrize("expr", [
    "$ABSENT", "${ABSENT}", '"$SECRET"', "${ABSENT:-d}", "${SECRET:-d}", "${ABSENT-d}", "${ABSENT:+a}",
    "${ABSENT:=d}", "${EMPTY:?empty}", "$?", "$$", "$!", "$-", "$RANDOM", "$PWD", "${#SET}",
    "${SET#v}", "${SET##v}", "${SET%v}", "${SET%%v}", "${SET/a/b}", "${SET:0:1}", "${!SET}",
    "${SET^^}", "${@:-x}", '"${EMPTY:-"x"}"',
])
def test_parameter_expansion_unknown(expr):
    ws = words("echo " + expr, ENV)
    assert len(ws) == 2 and ws[1].text is None and ws[1].reason and ws[1].raw == expr


def test_absent_variable_reason():
    assert words('echo "$MODEL_DIR"')[1].reason == "$MODEL_DIR is not set in the Pod spec (the image may set it)"


def test_assigning_default_sets_the_variable():
    assert texts("echo ${A:=fp8}; echo $A; echo ${A:=x}", {"A": ""})[0] == [["echo", "fp8"]] * 3
    assert texts("echo ${A:=fp8}; echo $A", {})[0] == [["echo", U], ["echo", U]]


@pytest.mark.parametrize("expr, expected", [
    ("$0", ["sh"]), ('"$1"', ["a b"]), ("$1", ["a", "b"]), ("$2", [U]), ("$3", ["c"]), ("${10}", ["j"]),
    ('"$10"', ["a b0"]), ('"$11"', ["a b1"]), ("${12}", []), ("$#", ["11"]), ('"$@"', ["a b", U, "c", "", "e", "f", "g", "h", "i", "j", "k"]),
    ('x"$@"y', ["xa b", U, "c", "", "e", "f", "g", "h", "i", "j", "ky"]),
])
def test_positional_parameters(expr, expected):
    positional = ("sh", "a b", None, "c", "", "e", "f", "g", "h", "i", "j", "k")
    assert texts("echo " + expr, {}, positional)[0][0] == ["echo"] + expected


@pytest.mark.parametrize("expr, positional, expected", [
    ('"$@"', ("sh",), []),
    ('"$@"', (), []),
    ('"$*"', ("sh",), [""]),
    ('"$*"', ("sh", "a b", "c"), ["a b c"]),
    ("$*", ("sh", "a b", "", "c"), ["a", "b", "c"]),
    ("$@", ("sh", "a b", "", "c"), ["a", "b", "c"]),
    ('"$@"', ("sh", ""), [""]),
    ("$0", (), [U]),
    ("$0", (None,), [U]),
    ("$1", ("sh",), []),
])
def test_all_positional(expr, positional, expected):
    assert texts("echo " + expr, {}, positional)[0][0] == ["echo"] + expected


def test_unquoted_positional_with_unknown_value_may_split():
    w = words("exec vllm $@", {}, ("sh", None))[2]
    assert w.text is None and w.may_split


def test_set_and_shift_change_positional():
    cmds, _ = texts('set -- "$@" --kv-cache-dtype fp8; shift; exec vllm "$@"', {}, ("sh", "serve", "m"))
    assert cmds[-1] == ["exec", "vllm", "m", "--kv-cache-dtype", "fp8"]
    assert texts('shift $N; exec vllm "$@"', {}, ("sh", "a"))[0][-1] == ["exec", "vllm", U]
    assert texts('shift 2; exec vllm "$@"', {}, ("sh", "a"))[0][-1] == ["exec", "vllm", U]
    assert texts('set -e -o pipefail; exec vllm "$@"', {}, ("sh", "a"))[0][-1] == ["exec", "vllm", "a"]


def test_nounset():
    cmds, _ = texts("unset A; echo $A; set -u; echo $A ${A-d}; set +u; echo $A", {"A": "x"})
    assert cmds == [["unset", "A"], ["echo"], ["set", "-u"], ["echo", U, "d"], ["set", "+u"], ["echo"]]


# --- word splitting, IFS, globbing, tilde, braces ---------------------------------------------

def test_word_splitting():
    env = {"E": " a \t b\n", "N": ""}
    assert texts('echo $E x$E"y" $N "$N" $N$N', env)[0] == [["echo", "a", "b", "x", "a", "b", "y", ""]]
    assert texts('echo x${E}y', {"E": "a b"})[0] == [["echo", "xa", "by"]]


def test_ifs_assignment_makes_unquoted_expansions_unknown():
    cmds, _ = texts('IFS=,; echo $A "$A" a "$*"; unset IFS; echo $A', {"A": "x,y"}, ("sh", "1"))
    assert cmds == [[], ["echo", U, "x,y", "a", U], ["unset", "IFS"], ["echo", "x,y"]]
    assert texts("IFS=, read a b; echo $A", {"A": "x y"})[0][-1] == ["echo", "x", "y"]  # prefix only


def test_ifs_from_the_environment_is_ignored():
    assert texts("echo $A", {"A": "x,y", "IFS": ","})[0] == [["echo", "x,y"]]


@pytest.mark.parametrize("word, known", [
    ("*.yaml", False), ("m?", False), ("[ab]", False), ("$G", False), ("x[$E]", False),
    ("'*.yaml'", True), ('"m?"', True), ("\\*", True), ("[", True), ("]", True), ("a[b", True), ('"$G"', True),
])
def test_globbing(word, known):
    w = words("echo " + word, {"G": "*.bin", "E": "x"})[1]
    assert (w.text is not None) == known
    if not known:
        assert "match files" in w.reason and w.may_split


def test_tilde():
    assert texts("echo ~ ~/m x~ '~' \\~ A=~", {"HOME": "/root"})[0] == [["echo", "/root", "/root/m", "x~", "~", "~", U]]
    assert texts("echo ~ ~/m ~root", {})[0] == [["echo", U, U, U]]
    assert texts("A=~/x B=a:~/y; echo $A $B --o=~/w", {"HOME": "/h"})[0][1] == ["echo", "/h/x", "a:/h/y", "--o=~/w"]


def test_brace_expansion_is_unknown():
    ws = words("echo {a,b} x{1..3} '{a,b}' {} {a} ${A}", {"A": "v"})
    assert [w.text for w in ws] == ["echo", U, U, "{a,b}", "{}", "{a}", "v"]


# --- command substitution and friends ---------------------------------------------------------

@pytest.mark.parametrize("expr", [
    "$(date)", "`date`", "$((1+2))", "<(ls)", ">(tee x)", "$(NAME)", "x$(echo 'a)b' \"c)d\" $(echo ')'))y",
    "$(case x in a) echo;; esac)", '"$(echo "a b")"', "$(cat <<EOF\nx)\nEOF\n)",
])
def test_substitutions_make_the_word_unknown_and_keep_the_rest(expr):
    cmds, unknown = texts(f"echo {expr} after; vllm --kv-cache-dtype fp8")
    assert unknown is None or "here-document" in unknown
    assert cmds == [["echo", U, "after"], ["vllm", "--kv-cache-dtype", "fp8"]]


def test_substitution_reasons():
    assert "command substitution $(date)" in words("echo $(date)")[1].reason
    assert words("echo $(date)")[1].may_split  # unquoted: its output may split
    assert not words('echo "$(date)"')[1].may_split
    assert "Kubernetes" in words("echo $(MODEL_DIR)")[1].reason


# --- assignments ------------------------------------------------------------------------------

def test_assignments_update_later_expansions():
    cmds, _ = texts('A=1; B=$A C="x y"; export D="p q" E=$A; readonly F=f; echo $A $B "$C" "$D" $E $F')
    assert cmds[-1] == ["echo", "1", "1", "x y", "p q", "1", "f"]
    assert cmds[0] == [] and cmds[2] == ["export", "D=p q", "E=1"]


def test_assignment_words_are_reported():
    r = parse_script("A=1 B='x y' vllm serve", {})
    assert r.commands[0].assignments == (("A", Word("1", "", "A=1")), ("B", Word("x y", "", "B='x y'")))
    assert [w.text for w in r.commands[0].words] == ["vllm", "serve"]


def test_prefix_assignment_is_for_that_command_only():
    cmds, _ = texts("A=fp8 env; echo $A; X=1 vllm $X", {"A": "old"})
    assert cmds == [["env"], ["echo", "old"], ["vllm", U]]


def test_export_of_unquoted_expansion_with_spaces_is_unknown():
    # bash keeps "x y", older dash splits it into two arguments
    assert texts("export A=$V; echo \"$A\"", {"V": "x y"})[0] == [["export", U], ["echo", U]]
    assert texts("export A=$V; echo \"$A\"", {"V": "xy"})[0] == [["export", "A=xy"], ["echo", "xy"]]


@pytest.mark.parametrize("script", [
    "true && A=2", "false || A=2", "echo | A=2", "if x; then A=2; fi", "read A", ". /env.sh",
    "source /venv/bin/activate", "export $X", "A=2 :", "declare -i A=2", "eval A=2", "unset A | x",
])
def test_assignments_that_may_not_happen_make_the_value_unknown(script):
    cmds, _ = texts(script + '\necho "$A"', {"A": "1"})
    assert cmds[-1] == ["echo", U]


def test_background_assignment_does_not_change_the_shell():
    cmds, _ = texts("A=2 && echo $A &\necho $A", {"A": "1"})
    assert cmds == [[], ["echo", "2"], ["echo", "1"]]


def test_unset_makes_empty():
    assert texts('unset A; echo "$A" ${A:-d}', {"A": "1"})[0][-1] == ["echo", "", "d"]


def test_shell_variables_are_runtime():
    assert texts('echo "$PWD" "$HOSTNAME"', {"PWD": "/x", "HOSTNAME": "h"})[0] == [["echo", U, U]]


# --- control flow -----------------------------------------------------------------------------

@pytest.mark.parametrize("script, keyword", [
    ("if [ -f x ]; then vllm serve --kv-cache-dtype fp8; fi", "if"),
    ("for x in a b; do vllm $x; done", "for"),
    ("while true; do vllm; done", "while"),
    ("until false; do vllm; done", "until"),
    ("case $X in a) vllm;; esac", "case"),
    ("{ vllm; }", "{"),
    ("(cd /x && vllm)", "subshell"),
    ("f() { vllm; }; f", "function"),
    ("function f { vllm; }", "function"),
    ("[[ -f x ]] && vllm", "[["),
    ("((n++)); vllm", "arithmetic"),
])
def test_control_flow_makes_the_script_unknown(script, keyword):
    cmds, unknown = texts(script)
    assert unknown.startswith("shell control flow") and keyword in unknown
    assert any(c and c[0] == "vllm" for c in cmds)  # the commands inside are still reported


def test_case_arms_are_reported():
    cmds, unknown = texts('case "$1" in\n  a|b) vllm --kv-cache-dtype fp8 ;;\n  (*) exec sglang ;;\nesac; echo done')
    assert unknown == "shell control flow (case ...)"
    assert cmds == [["vllm", "--kv-cache-dtype", "fp8"], ["exec", "sglang"], ["echo", "done"]]


def test_keywords_only_at_command_position():
    assert texts("echo if then fi { } done; A=1 if") == ([["echo", "if", "then", "fi", "{", "}", "done"], ["if"]], None)


def test_if_reports_inner_commands():
    cmds, unknown = texts("if true; then exec vllm --kv-cache-dtype fp8; else exec vllm; fi")
    assert unknown == "shell control flow (if ...)"
    assert cmds == [["true"], ["exec", "vllm", "--kv-cache-dtype", "fp8"], ["exec", "vllm"]]


def test_negation_and_eval_and_alias():
    assert texts("! vllm x") == ([["vllm", "x"]], None)
    assert "eval" in texts('eval "vllm $ARGS"')[1]
    assert "alias" in texts("alias vllm='vllm --kv-cache-dtype fp8'\nvllm")[1]


# --- unterminated input -----------------------------------------------------------------------

@pytest.mark.parametrize("script, reason", [
    ("echo 'a", "unterminated single quote"),
    ('echo "a', "unterminated double quote"),
    ("echo $(a", "unterminated $("),
    ("echo ${a", "unterminated ${"),
    ("echo `a", "unterminated backquote"),
    ("echo $((1", "unterminated $(("),
    ("echo $'a", "unterminated $'"),
    ("echo \"$(echo ')\")", "unterminated"),
])
def test_unterminated(script, reason):
    cmds, unknown = texts("echo ok\n" + script)
    assert unknown.startswith(reason)
    assert cmds == [["echo", "ok"]]  # the line that cannot be finished is dropped


# --- never raises -----------------------------------------------------------------------------

ALPHABET = st.sampled_from(list("ab $'\"\\`(){}[]*?~#;&|<>=:-+%/!@\n\t0123456789ABIFSxcaseifdone") +
                           ["$(", "${", "$((", "<<", "EOF", "\\\n", "case ", "if ", "esac", " in "])


@settings(max_examples=600, deadline=None)
@given(script=st.one_of(st.text(), st.lists(ALPHABET, max_size=40).map("".join)),
       env=st.dictionaries(st.text(max_size=5), st.one_of(st.none(), st.text(max_size=10)), max_size=5),
       positional=st.lists(st.one_of(st.none(), st.text(max_size=5)), max_size=4))
def test_parse_script_never_raises(script, env, positional):
    r = parse_script(script, env, positional)
    assert isinstance(r, ScriptResult)
    assert r.unknown != _INTERNAL, script
    for c in r.commands:
        assert isinstance(c, SimpleCommand)
        assert all(isinstance(w, Word) and (w.text is not None or w.reason) for w in c.words)


@given(st.lists(st.one_of(st.text(max_size=8), st.sampled_from(["sh", "-c", "-o", "--", "-lc", "/bin/bash"])),
                max_size=6))
def test_shell_invocation_never_raises(argv):
    inv = shell_invocation(argv)
    assert inv is None or isinstance(inv, ShellInvocation)


def test_deep_nesting_does_not_raise():
    assert isinstance(parse_script("echo " + "$(" * 2000, {}), ScriptResult)


# --- differential: the model against real shells ----------------------------------------------
# Generated `printf '%s\0' WORDS` scripts run under dash and bash with concrete values for every
# variable; the model sees only what a Pod spec says: A/B known, P a Downward API field that is
# never empty (metadata.name: a DNS name), Q one that may be empty (status.podIP), U unknown (a
# Secret). Each word the model states must be the shell's; an unknown single word must start with
# its known prefix and, when plain, not with '-'; the word count must match unless a word may split.

import os
import shutil
import subprocess

REAL_SHELLS = [s for s in ("dash", "bash") if shutil.which(s)]
MODEL_ENV = {"A": "a b", "B": "-x", "P": ("shape", "$P comes from the Pod field metadata.name", True),
             "Q": ("shape", "$Q comes from the Pod field status.podIP", False),
             "U": ("unk", "$U comes from Secret s (key k)")}
_INNER = ["a b", "$A", "${A}", "$B", "${P}", "$P", "$Q", "$U", "${A:-d e}", "${Q:-0.0.0.0}", "${P:+y}",
          "${U:-z}", "${Q:+q}", "--x=", "/m/", ""]
_PART = st.one_of(
    st.sampled_from(["a", "--x", "-", "x=y", "/m/", "1", "--opt=", "-v"]),
    st.sampled_from(["'a b'", "'$A'", "''", "\\-z"]),
    st.lists(st.sampled_from(_INNER), min_size=1, max_size=3).map(lambda xs: '"' + "".join(xs) + '"'),
    st.sampled_from(["$A", "${A:-x y}", "$B", "$P", "$Q", "$U", "${Q:-z}", "${P:-z}", "${U:-z}", "${A:+-v}",
                     "${P:+-p}", "${Q-w}", "X=$P", "--h=$Q"]),
)
_WORD = st.lists(_PART, min_size=1, max_size=3).map("".join)
_DNS = st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,8}[a-z0-9])?", fullmatch=True)


def _real_words(shell, script, env, tmp):
    out = subprocess.run([shell, "-c", script], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
                         capture_output=True, cwd=tmp, timeout=10, check=True).stdout
    return out.decode().split("\0")[:-1]


@pytest.mark.skipif(not REAL_SHELLS, reason="no dash or bash on this machine")
@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORD, min_size=1, max_size=5), pod=_DNS, ip=st.sampled_from(["10.1.2.3", "fd00::1", ""]),
       secret=st.sampled_from(["", "x", "-x", "a b", "--kv-cache-dtype=fp8"]),
       shell=st.sampled_from(REAL_SHELLS or ["sh"]))
def test_words_agree_with_real_shells(words, pod, ip, secret, shell, tmp_path_factory):
    script = "printf '%s\\0' " + " ".join(words)
    real = _real_words(shell, script, {"A": "a b", "B": "-x", "P": pod, "Q": ip, "U": secret},
                       tmp_path_factory.getbasetemp())
    result = parse_script(script, MODEL_ENV)
    assert result.unknown is None, script
    model = result.commands[0].words[2:]
    j = 0
    for w in model:
        if w.may_split:
            return
        assert j < len(real), (script, real)
        if w.text is not None:
            assert real[j] == w.text, (script, real, w)
        else:
            assert w.reason and real[j].startswith(w.prefix), (script, real, w)
            if w.plain:
                assert not real[j].startswith("-"), (script, real, w)
        j += 1
    assert j == len(real), (script, real, model)
