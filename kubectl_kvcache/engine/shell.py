"""Follow `sh -c SCRIPT` far enough to know the argv each command of the script gets.

The words of a shell script reach the engine only after the shell's own parsing: quoting,
parameter expansion, field splitting, globbing, separators and comments. `shlex.split` does
none of that faithfully, so this is a small POSIX-sh lexer and parser for the common subset.
The rule of the project is that a wrong answer is worse than UNKNOWN: whatever depends on the
runtime (command substitution, a variable the image may set, a glob, control flow) becomes an
unknown word, or an unknown script, with a short reason. Nothing here raises on bad input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kubectl_kvcache.engine import data
from kubectl_kvcache.record import Record

SHELLS = data.SHELLS


class ShellInvocation(Record):
    __slots__ = ("script", "script_index", "positional", "options")

    def __init__(self, script: str, script_index: int, positional: tuple, options: tuple = ()):
        self.script = script  # the -c script text
        self.script_index = script_index  # index in argv of the script (len(argv) when -c has no operand)
        self.positional = positional  # ($0, $1, ...): the argv elements after the script
        self.options = options  # the shell's own option arguments, e.g. ('-l', '-o', 'pipefail', '-c')


def shell_invocation(argv: Sequence[str]) -> ShellInvocation | None:
    """The script and its positional parameters when argv is `<shell> [options] -c SCRIPT ...`.

    Options may be clustered (-lc, -euxc), take an argument (-o pipefail, -O extglob,
    --rcfile F) or come after -c; the script is the first operand after all of them.
    """
    if not argv or not isinstance(argv[0], str):
        return None
    if argv[0].rsplit("/", 1)[-1] not in SHELLS:
        return None
    i, has_c = 1, False
    while i < len(argv):
        arg = argv[i]
        if arg in ("--", "-"):
            i += 1
            break
        if arg in ("--rcfile", "--init-file"):
            i += 2
        elif arg.startswith("--"):
            i += 1
        elif len(arg) > 1 and arg[0] in "-+":
            letters = arg[1:]
            has_c = has_c or (arg[0] == "-" and "c" in letters)
            i += 1 + letters.count("o") + letters.count("O")  # each o/O takes the next argument
        else:
            break
    if not has_c:
        return None
    options = tuple(argv[1:i])
    if i >= len(argv):
        return ShellInvocation("", len(argv), (), options)
    return ShellInvocation(argv[i], i, tuple(argv[i + 1 :]), options)


class Word(Record):
    __slots__ = ("text", "reason", "raw", "may_split", "prefix", "plain")

    def __init__(self, text: str | None, reason: str = "", raw: str = "", may_split: bool = False,
                 prefix: str = "", plain: bool = False):
        self.text = text  # after quote removal and expansion; None when it depends on the runtime
        self.reason = reason  # why text is None
        self.raw = raw  # the word as written in the script
        self.may_split = may_split  # unknown AND the number of words it becomes is unknown too
        self.prefix = prefix  # unknown: its known leading text (before the first unknown value)
        self.plain = plain  # unknown, no prefix, its first value never starts with '-' (2: never empty)


class SimpleCommand(Record):
    __slots__ = ("words", "assignments", "background", "in_pipeline", "conditional")

    def __init__(self, words: tuple, assignments: tuple, background: bool, in_pipeline: bool,
                 conditional: bool = False):
        self.words = words  # Word, ...: the argv after expansion; assignments and redirections removed
        self.assignments = assignments  # (name, Word), ...: prefix assignments (FOO=1 cmd) or a bare FOO=1
        self.background = background  # its list ends with '&'
        self.in_pipeline = in_pipeline  # joined to another command by '|'
        self.conditional = conditional  # runs only depending on earlier commands (after && / ||, in if ...)


class ScriptResult(Record):
    __slots__ = ("commands", "unknown")

    def __init__(self, commands: tuple, unknown: str | None):
        self.commands = commands  # SimpleCommand, ... in execution order
        self.unknown = unknown  # why the script as a whole cannot be followed (commands may be partial)


# ---------------------------------------------------------------------------------------------
# Lexing: the script becomes tokens; a word token keeps its parts (quoted or not, expansions).
#   ('w', parts, raw, brace)  ('op', text)  ('nl',)  ('io', digits)  ('arith', raw)
# A part is ('lit', text, quoted) | ('param', name, op, arg_parts, quoted, raw)
#           | ('tilde', user, after_equals) | ('unk', reason, quoted)

_META = frozenset(" \t\n;&|()<>")
_OPS = (";;&", "<<<", "<<-", "&>>", "&&", "||", ";;", ";&", "|&", "<<", ">>", "<&", ">&", "<>",
        ">|", "&>", "|", "&", ";", "(", ")", "<", ">")
_REDIRS = frozenset({"<<<", "<<-", "&>>", "<<", ">>", "<&", ">&", "<>", ">|", "&>", "<", ">"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_BRACE = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_USER = re.compile(r"[A-Za-z0-9._-]*")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-]")
_PARAM_OPS = (":-", ":=", ":+", ":?", "-", "=", "+", "?")
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "?": "?", "a": "\a",
         "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v"}


class _Incomplete(Exception):
    """The script ends inside a quote or substitution: the shell refuses it."""


def _add(parts: list, text: str, quoted: bool) -> None:
    """Append literal text, merging with the previous literal of the same quoting."""
    if parts and parts[-1][0] == "lit" and parts[-1][2] == quoted:
        parts[-1] = ("lit", parts[-1][1] + text, quoted)
    else:
        parts.append(("lit", text, quoted))


def _lex(s: str, i: int = 0, nested: bool = False):
    """Tokens of s[i:] -> (tokens, end, error). nested: stop after the ')' closing a $(."""
    toks: list = []
    heredocs: list = []
    depth, cases, want_delim, n = 0, 0, None, len(s)  # cases: open `case` (their `x)` do not close)
    while i < n:
        c = s[i]
        if c in " \t":
            i += 1
            continue
        if s.startswith("\\\n", i):
            i += 2
            continue
        delim_op, want_delim = want_delim, None
        if c == "\n":
            toks.append(("nl",))
            i += 1
            for delim, strip in heredocs:
                i = _skip_heredoc(s, i, delim, strip)
            heredocs = []
            continue
        if c == "#":
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        try:
            if s.startswith("((", i) and _command_start(toks):
                j = _skip_parens(s, i)
                toks.append(("arith", s[i:j]))
                i = j
                continue
            if not (c in "<>" and s.startswith("(", i + 1)):
                op = next((o for o in _OPS if s.startswith(o, i)), None)
                if op:
                    i += len(op)
                    if nested and op == "(" and not cases:
                        depth += 1
                    elif nested and op == ")" and not cases:
                        if depth == 0:
                            return toks, i, None
                        depth -= 1
                    toks.append(("op", op))
                    want_delim = op if op in ("<<", "<<-") else None
                    continue
            parts, j, brace = _scan_word(s, i)
        except _Incomplete as e:
            if nested:
                raise
            return toks, n, str(e)
        raw = s[i:j]
        if re.fullmatch("[0-9]+", raw) and s[j : j + 1] in ("<", ">"):
            toks.append(("io", raw))
        else:
            if raw == "case" and _command_start(toks):
                cases += 1
            elif raw == "esac" and cases:
                cases -= 1
            toks.append(("w", parts, raw, brace))
            if delim_op:
                delim = "".join(p[1] for p in parts if p[0] == "lit")
                heredocs.append((delim, delim_op == "<<-"))
        i = j
    if nested:
        raise _Incomplete("unterminated $(")
    return toks, i, None


def _command_start(toks: list) -> bool:
    """Whether the next token stands where a command starts (for `((` arithmetic commands)."""
    if not toks or toks[-1][0] == "nl":
        return True
    last = toks[-1]
    if last[0] == "op":
        return last[1] not in _REDIRS
    return last[0] == "w" and last[2] in ("then", "do", "else", "elif", "if", "while", "until", "for", "{", "!")


def _skip_heredoc(s: str, i: int, delim: str, strip_tabs: bool) -> int:
    """Index after the line ending a here-document body that starts at s[i]."""
    while i < len(s):
        j = s.find("\n", i)
        end = len(s) if j < 0 else j
        line = s[i:end]
        if (line.lstrip("\t") if strip_tabs else line) == delim:
            return end + 1
        i = end + 1
    return len(s)


def _skip_parens(s: str, i: int) -> int:
    """Index after the ')' balancing the '(' at s[i] (arithmetic: no shell syntax inside)."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == "\\":
            i += 1
        elif c == "'":
            i = _single_quote_end(s, i)
        elif c == '"':
            i = _scan_dq(s, i + 1)[1] - 1
        elif c == "`":
            i = _skip_backquote(s, i) - 1
        i += 1
    raise _Incomplete("unterminated $((")


def _single_quote_end(s: str, i: int) -> int:
    j = s.find("'", i + 1)
    if j < 0:
        raise _Incomplete("unterminated single quote")
    return j


def _skip_backquote(s: str, i: int) -> int:
    """Index after the backquote closing the one at s[i]."""
    i += 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
        elif s[i] == "`":
            return i + 1
        else:
            i += 1
    raise _Incomplete("unterminated backquote")


def _scan_word(s: str, i: int, whole: bool = False):
    """Parts of the unquoted word at s[i:] -> (parts, end, brace).

    Stops at the first unquoted metacharacter, or runs to the end of s when whole (the text of
    a ${VAR:-word} default). brace: the word has an unquoted bash brace expansion ({a,b}).
    """
    parts: list = []
    mask: list = []  # unquoted literal characters, '\0' for the rest: to spot {a,b}
    start, n = i, len(s)
    while i < n:
        c = s[i]
        if c in _META and not whole:
            if c in "<>" and s.startswith("(", i + 1):
                j = _lex(s, i + 2, nested=True)[1]
                parts.append(("unk", f"process substitution {_short(s[i:j])}", False))
                mask.append("\0")
                i = j
                continue
            break
        if c == "'":
            j = _single_quote_end(s, i)
            _add(parts, s[i + 1 : j], True)
            i = j + 1
        elif c == '"':
            sub, i = _scan_dq(s, i + 1)
            if sub:
                parts.extend(sub)
            else:
                _add(parts, "", True)
        elif c == "\\":
            if s.startswith("\n", i + 1):
                i += 2
                continue
            _add(parts, s[i + 1 : i + 2] or "\\", True)
            i += 2
        elif c == "$" and s.startswith("'", i + 1):
            text, j = _ansi_c(s, i + 2)
            if text is None:
                parts.append(("unk", f"{_short(s[i:j])}: an escape in $'...' that is not followed", True))
            else:
                _add(parts, text, True)
            i = j
        elif c == "$" and s.startswith('"', i + 1):
            j = _scan_dq(s, i + 2)[1]
            parts.append(("unk", f'{_short(s[i:j])}: $"..." is translated by bash (locale)', True))
            i = j
        elif c == "$":
            part, i = _scan_dollar(s, i, False)
            if part[0] == "lit":
                _add(parts, "$", False)
                mask.append("$")
                continue
            parts.append(part)
        elif c == "`":
            j = _skip_backquote(s, i)
            parts.append(("unk", f"command substitution {_short(s[i:j])}", False))
            i = j
        elif c == "~" and (i == start or _after_assign_equals(mask)):
            user = _USER.match(s, i + 1)     # always matches (it may match nothing)
            j = user.end() if user else i + 1
            end_chars = "/:" if i > start else "/"
            if j >= n or s[j] in end_chars or (s[j] in _META and not whole):
                parts.append(("tilde", s[i + 1 : j], i > start))
                mask.append("\0")
                i = j
                continue
            parts.append(("unk", f"tilde expansion in {_short(s[start:])}", True))
            i += 1
        else:
            _add(parts, c, False)
            mask.append(c)
            i += 1
            continue
        mask.append("\0")
    brace = not whole and bool(_BRACE.search("".join(mask)))
    return parts, i, brace


def _after_assign_equals(mask: list) -> bool:
    """A '~' here follows the unquoted '=' or ':' of a NAME=value word (tilde applies there too)."""
    text = "".join(mask)
    return bool(mask) and mask[-1] in "=:" and bool(_ASSIGN.match(text))


def _scan_dq(s: str, i: int, whole: bool = False):
    """Parts of double-quoted text starting at s[i] -> (parts, index after the closing quote).

    whole: s is the default of a "${VAR:-word}" and runs to its end; a '"' inside is not followed.
    """
    parts: list = []
    n = len(s)
    while i < n:
        c = s[i]
        if c == '"':
            if not whole:
                return parts, i + 1
            parts.append(("unk", 'double quotes nested inside "${...}"', True))
            i += 1
        elif c == "\\":
            nx = s[i + 1 : i + 2]
            if nx == "\n":
                i += 2
            elif nx and (nx in '$`"\\' or (whole and nx == "}")):
                _add(parts, nx, True)
                i += 2
            else:
                _add(parts, "\\", True)
                i += 1
        elif c == "$":
            part, i = _scan_dollar(s, i, True)
            if part[0] == "lit":
                _add(parts, "$", True)
            else:
                parts.append(part)
        elif c == "`":
            j = _skip_backquote(s, i)
            parts.append(("unk", f"command substitution {_short(s[i:j])}", True))
            i = j
        else:
            _add(parts, c, True)
            i += 1
    if whole:
        return parts, i
    raise _Incomplete("unterminated double quote")


def _scan_dollar(s: str, i: int, quoted: bool):
    """The expansion starting with the '$' at s[i] -> (part, end); ('lit', '$', q) if none."""
    nx = s[i + 1 : i + 2]
    if nx == "(":
        if s.startswith("((", i + 1):
            j = _skip_parens(s, i + 1)
            return ("unk", f"arithmetic expansion {_short(s[i:j])}", quoted), j
        j = _lex(s, i + 2, nested=True)[1]
        return ("unk", _cmdsub_reason(s[i:j]), quoted), j
    if nx == "{":
        j = _brace_end(s, i + 2, quoted)
        return _brace_param(s[i + 2 : j], quoted, s[i : j + 1]), j + 1
    m = _NAME.match(s, i + 1)
    if m:
        return ("param", m.group(), None, None, quoted, s[i : m.end()]), m.end()
    if nx and nx in "0123456789@*#?$!-":
        return ("param", nx, None, None, quoted, s[i : i + 2]), i + 2
    return ("lit", "$", quoted), i + 1


def _cmdsub_reason(text: str) -> str:
    if re.fullmatch(r"\$\([A-Z_][A-Z0-9_]*\)", text):
        return (f"command substitution {text} (Kubernetes leaves $(NAME) as written when NAME is "
                "not defined; the shell then runs NAME as a command)")
    return f"command substitution {_short(text)}"


def _brace_end(s: str, i: int, quoted: bool) -> int:
    """Index of the '}' closing a '${' whose content starts at s[i]."""
    while i < len(s):
        c = s[i]
        if c == "}":
            return i
        if c == "\\":
            i += 2
        elif c == "$":
            i = _scan_dollar(s, i, quoted)[1]
        elif c == "`":
            i = _skip_backquote(s, i)
        elif c == '"':
            i = _scan_dq(s, i + 1)[1]
        elif c == "'" and not quoted:
            i = _single_quote_end(s, i) + 1
        else:
            i += 1
    raise _Incomplete("unterminated ${")


def _brace_param(content: str, quoted: bool, raw: str) -> tuple:
    """The part for ${content}: a plain parameter or one of the default/alternative forms."""
    m = _PARAM.match(content)
    if not m or (content.startswith("#") and len(content) > 1):
        return ("unk", f"{_short(raw)}: this form of parameter expansion is not followed", quoted)
    name, rest = m.group(), content[m.end() :]
    if not rest:
        return ("param", name, None, None, quoted, raw)
    for op in _PARAM_OPS:
        if rest.startswith(op):
            text = rest[len(op) :]
            try:
                arg = _scan_dq(text, 0, whole=True)[0] if quoted else _scan_word(text, 0, whole=True)[0]
            except _Incomplete:
                return ("unk", f"{_short(raw)}: an unterminated quote inside", quoted)
            return ("param", name, op, arg, quoted, raw)
    return ("unk", f"{_short(raw)}: this form of parameter expansion is not followed", quoted)


def _ansi_c(s: str, i: int):
    """Decode bash $'...' from s[i] (after the quote) -> (text or None if not followed, end)."""
    out: list[str] = []
    known = True
    while i < len(s):
        c = s[i]
        if c == "'":
            return ("".join(out) if known else None), i + 1
        if c == "\\":
            nx = s[i + 1 : i + 2]
            if nx and nx in _ANSI:
                out.append(_ANSI[nx])
            else:
                known = False  # \x41, \u00e9, \0101, \cA: not decoded
            i += 2
            continue
        out.append(c)
        i += 1
    raise _Incomplete("unterminated $'")


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# Expansion: what the shell knows while running the script.

_DYNAMIC = frozenset({
    "PWD", "OLDPWD", "RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASHPID", "PPID", "UID", "EUID",
    "SHLVL", "HOSTNAME", "BASH", "BASH_VERSION", "BASHOPTS", "SHELLOPTS", "EPOCHSECONDS",
    "EPOCHREALTIME", "HISTCMD", "OPTIND", "OPTARG", "GROUPS", "FUNCNAME", "BASH_SOURCE",
    "BASH_LINENO", "BASH_COMMAND", "BASH_SUBSHELL", "PIPESTATUS", "MACHTYPE", "HOSTTYPE", "OSTYPE",
})
_SPECIAL = {"?": "$? is the exit status of an earlier command", "$": "$$ is the shell's process id",
            "!": "$! is the process id of a background command", "-": "$- lists the shell's options"}
_DEFAULT_IFS = ("set", " \t\n")
_DECLARE = frozenset({"export", "readonly", "declare", "typeset", "local"})
_SPECIAL_BUILTINS = frozenset({"break", ":", "continue", ".", "eval", "exec", "exit", "export",
                               "readonly", "return", "set", "shift", "times", "trap", "unset"})
_READS_NAMES = frozenset({"read", "mapfile", "readarray", "getopts", "let", "printf"})


class _State(Record):
    """Variables ('set', v) | ('unset',) | ('unk', reason) | ('shape', reason, nonempty); $1... ; $0;
    set -u. 'shape': set, value unknown, but it never starts with '-' and holds no IFS whitespace or
    glob character (argv.PLAIN_FIELDS), and is never empty when `nonempty`."""

    __slots__ = ("vars", "params", "params_reason", "arg0", "nounset", "absent")
    __hash__ = None  # mutable

    def __init__(self, vars: dict, params: list | None, params_reason: str, arg0: tuple, nounset: bool = False,
                 absent: str = ""):
        self.vars = vars
        self.params = params  # [('set', v) | ('unk', reason)]; None when not even the count is known
        self.params_reason = params_reason
        self.arg0 = arg0
        self.nounset = nounset
        self.absent = absent  # who else may define a name the Pod spec does not list (envFrom ...)

    def copy(self) -> _State:
        params = None if self.params is None else list(self.params)
        return _State(dict(self.vars), params, self.params_reason, self.arg0, self.nounset, self.absent)

    def lookup(self, name: str) -> tuple:
        if name.isdigit() and name.isascii():
            if name == "0":
                return self.arg0
            if self.params is None:
                return ("unk", self.params_reason)
            k = int(name) if len(name) < 10 else 10**9
            return self.params[k - 1] if k <= len(self.params) else ("unset",)
        return self.vars.get(name) or ("unk", f"${name} is not set in the Pod spec (the image{self.absent} may "
                                              f"set it)")

    def ifs_default(self) -> bool:
        return self.vars.get("IFS") in (_DEFAULT_IFS, ("unset",))


def _initial_state(env: Mapping[str, str | None], positional: Sequence[str | None], absent: str = "") -> _State:
    variables = {}
    for name, value in env.items():
        if value is None:
            variables[name] = ("unk", f"${name} comes from valueFrom/envFrom: its value is not in the Pod spec")
        elif isinstance(value, tuple) and value[:1] in (("shape",), ("unk",)):
            variables[name] = value
        else:
            variables[name] = ("set", value)
    for name in _DYNAMIC:
        variables[name] = ("unk", f"${name} is set by the shell at runtime")
    variables["IFS"] = _DEFAULT_IFS  # every shell resets IFS at startup
    pos = list(positional)
    params = [("unk", f"${k} comes from an argv element whose value is not known") if v is None
              else ("set", v) for k, v in enumerate(pos[1:], 1)]
    if not pos:
        arg0 = ("unk", "$0 is the shell's own name (no argument follows the script)")
    elif pos[0] is None:
        arg0 = ("unk", "$0 comes from an argv element whose value is not known")
    else:
        arg0 = ("set", pos[0])
    return _State(variables, params, "", arg0, absent=f" or {absent}" if absent else "")


# Segments of an expanded word: ('s', text, quoted, splits) | ('u', reason, quoted) | ('brk',)
# splits: the text came from an unquoted expansion (field splitting and globbing apply).

def _eval_part(part: tuple, st: _State, in_assign: bool, raw: str) -> list:
    kind = part[0]
    if kind == "lit":
        return [("s", part[1], part[2], False)]
    if kind == "unk":
        return [("u", part[1], part[2])]
    if kind == "tilde":
        user, after_equals = part[1], part[2]
        if after_equals and not in_assign:
            return [("u", f"bash expands the ~ in {_short(raw)}, other shells do not", True)]
        if user:
            return [("u", f"~{user} is the home directory of user {user}", True)]
        home = st.lookup("HOME")
        if home[0] == "set":
            return [("s", home[1], True, False)]
        return [("u", "~ is the value of $HOME, which is not set in the Pod spec", True)]
    return _eval_param(part, st)


def _value(text: str, quoted: bool, st: _State) -> tuple:
    if not quoted and not st.ifs_default() and text:
        return ("u", "the script may change IFS, so how this value splits is not followed", False)
    return ("s", text, quoted, not quoted)


def _eval_param(part: tuple, st: _State) -> list:
    _, name, op, arg, quoted, raw = part
    if name in ("@", "*"):
        if op:
            return [("u", f"{_short(raw)}: this form of parameter expansion is not followed", False)]
        return _eval_all_params(name, quoted, st)
    if name == "#":
        if st.params is None:
            return [("u", st.params_reason, quoted)]
        return [_value(str(len(st.params)), quoted, st)]
    if name in _SPECIAL:  # digits or option letters: always one word with the default IFS
        return [("u", _SPECIAL[name], quoted or st.ifs_default())]
    cur = st.lookup(name)
    if cur[0] == "shape":
        return _eval_shape(cur, op, arg, quoted, raw, st)
    if cur[0] == "unk":
        reason = cur[1] if op is None else f"{_short(raw)}: {cur[1]}"
        return [("u", reason, quoted)]
    is_set = cur[0] == "set"
    val = cur[1] if is_set else ""
    if op is None:
        if not is_set and st.nounset:
            return [("u", f"set -u: ${name} is unset, so the shell stops here", quoted)]
        return [_value(val, quoted, st)]
    use_word = (not is_set or val == "") if op.startswith(":") else not is_set
    kind = op[-1]
    if kind == "+":
        return _eval_arg(arg, st) if not use_word else [_value("", quoted, st)]
    if not use_word:
        return [_value(val, quoted, st)]
    if kind == "-":
        return _eval_arg(arg, st)
    if kind == "?":
        return [("u", f"{_short(raw)}: ${name} is unset or empty, so the shell stops here", quoted)]
    # ':=' / '=': assign the default, then expand to it
    if not _NAME.fullmatch(name):
        return [("u", f"{_short(raw)}: cannot assign to a positional parameter", quoted)]
    text, reason = _join(_eval_arg(arg, st))
    st.vars[name] = ("set", text) if text is not None else ("unk", reason)
    return [_value(text, quoted, st)] if text is not None else [("u", reason, quoted)]


def _eval_shape(cur: tuple, op: str | None, arg: list, quoted: bool, raw: str, st: _State) -> list:
    """A set variable of known shape: one plain word (zero when empty and unquoted)."""
    _, reason, nonempty = cur
    if not st.ifs_default():
        return [("u", "the script may change IFS, so how this value splits is not followed", False)]
    if op is not None and op.startswith(":") and not nonempty:
        return [("u", f"{_short(raw)}: {reason}, which may be empty", quoted)]
    if op is not None and op[-1] == "+":
        return _eval_arg(arg, st)   # set (and, for ':+', not empty): the alternative word
    if not quoted and not nonempty:   # one plain word, or none when empty and nothing else makes the word
        return [("u", reason, True, 1, True)]
    return [("u", reason, True, 2 if nonempty else 1)]


def _eval_arg(arg: list, st: _State) -> list:
    """The word of ${VAR:-word}: its unquoted text is an expansion result (it splits)."""
    segs = []
    for part in arg:
        for seg in _eval_part(part, st, False, ""):
            if seg[0] == "s" and not seg[2]:
                seg = _value(seg[1], False, st)
            segs.append(seg)
    return segs


def _eval_all_params(name: str, quoted: bool, st: _State) -> list:
    """$@ / $* / "$@" / "$*": one field per positional parameter, or joined for "$*"."""
    if st.params is None:
        return [("u", st.params_reason, False)]
    if quoted and name == "*":
        unknown = next((p[1] for p in st.params if p[0] == "unk"), None)
        if unknown or not st.ifs_default():
            return [("u", unknown or 'the script may change IFS, which joins "$*"', True)]
        return [("s", " ".join(p[1] for p in st.params), True, False)]
    segs: list = []
    for k, p in enumerate(st.params):
        if k:
            segs.append(("brk",))
        segs.append(("u", p[1], quoted) if p[0] == "unk" else _value(p[1], quoted, st))
    return segs


def _join(segs: list, declared: bool = False) -> tuple[str | None, str]:
    """Segments as one value without splitting (an assignment) -> (text or None, reason)."""
    out = []
    for seg in segs:
        if seg[0] == "brk":
            return None, '"$@" in an assignment is joined differently by each shell'
        if seg[0] == "u":
            return None, seg[1]
        _, text, quoted, splits = seg
        if declared and not quoted and re.search(r"[*?[]" if not splits else r"[ \t\n*?[]", text):
            return None, "an unquoted expansion in an export/readonly argument splits in some shells (dash)"
        out.append(text)
    return "".join(out), ""


def _fields(segs: list, raw: str) -> list[Word]:
    """Field splitting, then the glob check: the words one shell word becomes."""
    fields: list = []  # [pieces [(text, globbable)], unknown reason, known prefix, plain]
    solid: set = set()  # the fields that cannot vanish
    cur: list | None = None
    split_reason = None
    for seg in segs:
        if seg[0] == "brk":
            cur = None
            continue
        if seg[0] == "u" and not seg[2]:
            split_reason = split_reason or seg[1]
            continue
        if seg[0] == "u" or seg[2] or not seg[3]:
            if cur is None:
                cur = [[], None, "", False, False]
                fields.append(cur)
            if seg[0] != "u" or len(seg) < 5:
                solid.add(id(cur))   # a literal (even a quoted "") or a value that is never no word
            cur[4] = cur[1] is not None  # something follows the first unknown value
            if seg[0] == "u":
                if cur[1] is None:  # the first unknown value: what is known before it
                    cur[2] = "".join(p for p, _ in cur[0])
                    cur[3] = not cur[2] and len(seg) > 3 and seg[3]
                cur[1] = cur[1] or seg[1]
            else:
                cur[0].append((seg[1], not seg[2]))
            continue
        for piece in re.split(r"([ \t\n]+)", seg[1]):
            if not piece:
                continue
            if piece[0] in " \t\n":
                cur = None
                continue
            if cur is None:
                cur = [[], None, "", False, False]
                fields.append(cur)
            solid.add(id(cur))
            cur[4] = cur[1] is not None
            cur[0].append((piece, True))
    if split_reason:
        return [Word(None, f"{split_reason}; it is unquoted, so it may split into several words", raw, True)]
    words = []
    for field in fields:
        pieces, reason, prefix, plain, after = field
        if plain == 1 and after:  # an empty value lets what follows it start the word
            plain = False
        if id(field) not in solid:
            words.append(Word(None, f"{reason}; unquoted, it is no word at all when empty", raw, True))
        elif _globby(pieces):
            words.append(Word(None, f"{_short(raw)} may match files (an unquoted glob)", raw, True))
        elif reason:
            words.append(Word(None, reason, raw, prefix=prefix, plain=plain))
        else:
            words.append(Word("".join(p for p, _ in pieces), "", raw))
    return words


def _globby(pieces: list) -> bool:
    bracket = False
    for text, globbable in pieces:
        for ch in text:
            if globbable and ch in "*?":
                return True
            if globbable and ch == "[":
                bracket = True
            elif ch == "]" and bracket:
                return True
    return False


def _expand(tok: tuple, st: _State) -> list[Word]:
    _, parts, raw, brace = tok
    if brace:
        return [Word(None, f"{_short(raw)}: bash brace expansion may make several words", raw, True)]
    segs: list = []
    for part in parts:
        segs.extend(_eval_part(part, st, False, raw))
    return _fields(segs, raw)


def _assignment_name(tok: tuple) -> str | None:
    """The NAME of a NAME=value word (the '=' unquoted), else None."""
    if tok[0] != "w" or not tok[1] or tok[1][0][0] != "lit" or tok[1][0][2]:
        return None
    m = _ASSIGN.match(tok[1][0][1])
    return m.group(1) if m else None


def _assignment(tok: tuple, st: _State, declared: bool = False) -> tuple[str, Word]:
    """(NAME, value Word) of a NAME=value word; += and arrays are not followed."""
    parts, raw = tok[1], tok[2]
    m = _ASSIGN.match(parts[0][1])
    assert m is not None, "only words _assignment_name matched are assignments"
    name = m.group(1)
    if m.group(2) or m.group(3):
        return name, Word(None, f"{_short(raw)}: array or += assignment is not followed", raw)
    rest = parts[0][1][m.end() :]
    value_parts = ([("lit", rest, False)] if rest else []) + list(parts[1:])
    segs: list = []
    for part in value_parts:
        segs.extend(_eval_part(part, st, True, raw))
    if len(segs) == 1 and segs[0][0] == "u" and len(segs[0]) > 3:  # X=$POD_NAME keeps its shape
        return name, Word(None, segs[0][1], raw, plain=segs[0][3])
    text, reason = _join(segs, declared)
    return name, Word(text, reason, raw)


def _set_var(st: _State, name: str, word: Word) -> None:
    if word.text is None and word.plain:
        st.vars[name] = ("shape", f"${name} is {word.raw.split('=', 1)[-1]}: {word.reason}", word.plain == 2)
    else:
        st.vars[name] = ("set", word.text) if word.text is not None else ("unk", f"${name}: {word.reason}")


def _clobber(st: _State, what: str) -> None:
    """After `. file`, `eval ...`: any variable and $1... may have changed."""
    for name in list(st.vars):
        st.vars[name] = ("unk", f"${name} may be changed by {what}")
    st.params, st.params_reason = None, f"the positional parameters may be changed by {what}"


def _merge(st: _State, sub: _State, why: str) -> None:
    """What a command run in a copy (maybe not run, or in a subshell) did becomes unknown."""
    for name in set(st.vars) | set(sub.vars):
        if st.vars.get(name) != sub.vars.get(name):
            st.vars[name] = ("unk", f"${name} {why}")
    if st.params != sub.params:
        st.params, st.params_reason = None, f"the positional parameters {why.replace('is ', 'are ', 1)}"
    st.nounset = st.nounset or sub.nounset


def _run(toks: list, st: _State, notes: list):
    """Expand one simple command and apply what it does to the state -> (words, assignments)."""
    k = 0
    while k < len(toks) and _assignment_name(toks[k]):
        k += 1
    assign_toks, word_toks = toks[:k], toks[k:]
    declared = bool(word_toks) and _literal(word_toks[0]) in _DECLARE
    words: list[Word] = []
    decl_sets = []
    for j, tok in enumerate(word_toks):
        if declared and j > 0 and _assignment_name(tok):
            name, value = _assignment(tok, st, declared=True)
            decl_sets.append((name, value))
            text = None if value.text is None else f"{name}={value.text}"
            words.append(Word(text, value.reason, value.raw))
        else:
            words.extend(_expand(tok, st))
    # The words were expanded first; then NAME=value, left to right. Without a command name
    # they stay in the shell; before a command they are only that command's environment.
    target = st if not words else st.copy()
    assigns = []
    for tok in assign_toks:
        name, word = _assignment(tok, target)
        _set_var(target, name, word)
        assigns.append((name, word))
    cmd = words[0].text if words else None
    if assigns and words and (cmd is None or cmd in _SPECIAL_BUILTINS):
        for name, _ in assigns:
            st.vars[name] = ("unk", f"${name} is assigned before {words[0].raw}, which keeps it in some shells")
    for name, value in decl_sets:
        _set_var(st, name, value)
    _builtin(cmd, words, st, notes)
    return tuple(words), tuple(assigns)


def _literal(tok: tuple) -> str | None:
    """The text of a word token written without quotes or expansions."""
    if tok[0] == "w" and len(tok[1]) == 1 and tok[1][0][0] == "lit" and not tok[1][0][2]:
        return tok[1][0][1]
    return None


def _builtin(cmd: str | None, words: list[Word], st: _State, notes: list) -> None:
    """The state changes of builtins that set variables or positional parameters."""
    args = words[1:]
    what = "`" + _short(" ".join(w.raw for w in words)) + "`"
    if cmd in _DECLARE:
        if any(w.text is None and "=" not in w.raw for w in args):
            _clobber(st, what)
        elif cmd in ("declare", "typeset", "local") and any(
            w.text and w.text[0] in "-+" and set(w.text[1:]) - set("xrg") for w in args
        ):
            for w in args:
                m = _NAME.match(w.text or "")
                if m:
                    st.vars[m.group()] = ("unk", f"${m.group()} is given attributes by {what}")
    elif cmd == "unset":
        if any(w.text == "-f" for w in args):
            return
        for w in args:
            if w.text is None:
                _clobber(st, what)
            elif _NAME.fullmatch(w.text):
                st.vars[w.text] = ("unset",)
    elif cmd == "set":
        _set_builtin(args, st, notes, what)
    elif cmd == "shift":
        n = args[0].text if args else "1"
        if st.params is None:
            return
        if n is None or not re.fullmatch("[0-9]{1,9}", n) or int(n) > len(st.params):
            st.params, st.params_reason = None, f"the positional parameters after {what} are not known"
        else:
            st.params = st.params[int(n) :]
    elif cmd in (".", "source"):
        _clobber(st, what)
    elif cmd == "eval":
        notes.append(f"{what} runs a command built at runtime")
        _clobber(st, what)
    elif cmd == "alias":
        notes.append(f"{what}: aliases may change later commands")
    elif cmd in _READS_NAMES and (cmd != "printf" or any(w.text == "-v" for w in args)):
        for w in args:
            if w.text is None:
                _clobber(st, what)
                return
            m = _NAME.match(w.text)
            if m:
                st.vars[m.group()] = ("unk", f"${m.group()} is set at runtime by {what}")


def _set_builtin(args: list[Word], st: _State, notes: list, what: str) -> None:
    """`set -e`, `set -o pipefail`, `set -u`, `set -- a b` (new $1...)."""
    k = 0
    while k < len(args):
        text = args[k].text
        if text is None:
            st.params, st.params_reason = None, f"the positional parameters after {what} are not known"
            st.nounset = True
            return
        if text in ("--", "-"):
            if text == "--" or k + 1 < len(args):
                _new_params(args[k + 1 :], st, what)
            return
        if len(text) > 1 and text[0] in "-+":
            letters = text[1:]
            if "u" in letters:
                st.nounset = text[0] == "-"
            if "k" in letters and text[0] == "-":
                notes.append(f"{what}: set -k moves NAME=value arguments into the environment")
            for _ in range(letters.count("o")):
                k += 1
                opt = args[k].text if k < len(args) else ""
                if opt is None or opt == "nounset":
                    st.nounset = opt is None or text[0] == "-"
            k += 1
            continue
        _new_params(args[k:], st, what)
        return


def _new_params(args: list[Word], st: _State, what: str) -> None:
    if any(w.may_split for w in args):
        st.params, st.params_reason = None, f"the positional parameters after {what} are not known"
    else:
        st.params = [("set", w.text) if w.text is not None else ("unk", w.reason) for w in args]


# ---------------------------------------------------------------------------------------------
# Parsing: tokens -> and-or lists of simple commands, then run them in order.

_OPENERS = frozenset({"if", "then", "else", "elif", "while", "until", "do", "{", "!"})
_CLOSERS = frozenset({"fi", "done", "}"})
_KEYWORDS = _OPENERS | _CLOSERS | {"case", "esac", "for", "select", "[[", "]]", "function", "coproc"}


def _group(toks: list, notes: list) -> list:
    """Split tokens into and-or lists -> [(commands [(tokens, link, control)], background)].

    link: the operator before the command ('&&', '||', '|', '|&' or None); control: the
    command comes after shell control flow began, so it may run any number of times.
    """
    return _Grouper(toks, notes).run()


class _Grouper:
    """The walk of `_group`, one named step per kind of token."""

    def __init__(self, toks: list, notes: list):
        self.toks, self.notes = toks, notes
        self.i, self.n = 0, len(toks)
        self.lists: list = []
        self.cmds: list = []
        self.cur: list = []
        self.seen = False  # cur has a word or a redirection
        self.link: str | None = None
        self.control = False
        self.fresh = True  # nothing since the last separator: an operator here is a syntax error
        self.closed = False  # just after `}`, `fi`, `)`...: a redirection here is not a command of its own
        self.cases, self.pattern = 0, False  # open `case`s; the next tokens are a `pat)` of one

    def run(self) -> list:
        while self.i < self.n:
            self._step(self.toks[self.i])
        return self._finish()

    def _step(self, tok: tuple) -> None:
        if self.pattern:
            return self._case_pattern(tok)
        kw = _literal(tok) if not self.seen else None
        if kw in _KEYWORDS:
            return self._keyword(kw)
        if tok[0] == "w":
            self.cur.append(tok)
            self.seen, self.fresh, self.closed = True, False, False
            self.i += 1
            return None
        if tok[0] == "io":
            self.i += 1
            return None
        if tok[0] == "arith":
            self.notes.append(f"shell control flow ({_short(tok[1])} arithmetic)")
            self.control, self.fresh = True, False
            self.i += 1
            return None
        op = tok[1] if tok[0] == "op" else "\n"
        self.i += 1
        if op in _REDIRS:
            return self._redirection(op)
        if op == "(":
            return self._open_paren()
        self.closed = False
        if op == "\n" and self.fresh:
            return None
        return self._separator(op)

    def _skip_to(self, stop) -> None:
        """Advance while the token is not `stop(token)`."""
        while self.i < self.n and not stop(self.toks[self.i]):
            self.i += 1

    def _case_pattern(self, tok: tuple) -> None:
        """Skip `pat)` up to the arm's commands, or leave at `esac`."""
        if _literal(tok) == "esac":
            self.cases, self.pattern, self.fresh, self.closed = self.cases - 1, False, False, True
        elif tok[0] != "nl":
            self._skip_to(lambda t: t == ("op", ")"))
            self.pattern, self.fresh = False, True
        self.i += 1

    def _keyword(self, kw: str) -> None:
        """A reserved word where a command starts: control flow, and the words it owns skipped."""
        if kw != "!":
            self.notes.append(f"shell control flow ({kw} ...)")
            self.control = True
        self.i += 1
        if kw == "[[":
            self._skip_to(lambda t: _literal(t) == "]]")
            self.i += 1
        elif kw == "case":
            self._skip_to(lambda t: _literal(t) == "in")
            self.i += 1
            self.cases, self.pattern = self.cases + 1, True
        elif kw == "esac" and self.cases:
            self.cases -= 1
        elif kw in ("for", "select"):
            self._skip_to(lambda t: t[0] == "nl" or t == ("op", ";") or _literal(t) == "do")
            self.i += 1 if self.i < self.n and _literal(self.toks[self.i]) != "do" else 0
        elif kw == "function":
            self.i += 1
            if self.toks[self.i : self.i + 2] == [("op", "("), ("op", ")")]:
                self.i += 2
        self.fresh = kw not in _CLOSERS and kw not in ("case", "esac", "[[")
        self.closed = not self.fresh

    def _redirection(self, op: str) -> None:
        """`> file`, `2>&1`, `<<EOF`: removed with its target word."""
        if op in ("<<", "<<-"):
            self.notes.append("here-document (<<): its text is not followed")
        if self.i < self.n and self.toks[self.i][0] == "w":
            self.i += 1
            self.seen, self.fresh = self.seen or not self.closed, False
        else:
            self.notes.append(f"syntax error near {op!r}")

    def _open_paren(self) -> None:
        """`name()` (a function), `( ... )` (a subshell), or a syntax error after a word."""
        if len(self.cur) == 1 and self.toks[self.i : self.i + 1] == [("op", ")")]:
            self.notes.append(f"shell control flow (function {_short(self.cur[0][2])}() ...)")
            self.cur, self.seen, self.control, self.fresh = [], False, True, True
            self.i += 1
        elif self.seen:
            self.notes.append("syntax error near '('")
        else:
            self.notes.append("shell control flow (( ... ) subshell)")
            self.control, self.fresh = True, True

    def _separator(self, op: str) -> None:
        """`&&`, `||`, `|` link commands; `;`, `&`, a newline, `)`, `;;` end an and-or list."""
        arm_end = op in (";;", ";&", ";;&")
        if (self.fresh and op != ")" and not (arm_end and self.cases)) or (arm_end and not self.cases):
            self.notes.append(f"syntax error near {op!r}")
        if self.seen:
            self.cmds.append((self.cur, self.link, self.control))
            self.cur, self.seen = [], False
        if op in ("&&", "||", "|", "|&"):
            self.link, self.fresh = op, True
            return
        if self.cmds:
            self.lists.append((self.cmds, op == "&"))
        self.cmds, self.link = [], None
        if op == ")":
            self.notes.append("shell control flow (( ... ) subshell)")
            self.control, self.fresh, self.closed = True, False, True
        else:
            self.fresh, self.pattern = True, arm_end and self.cases > 0

    def _finish(self) -> list:
        if self.link and not self.seen:
            self.notes.append(f"syntax error: the script ends after {self.link!r}")
        if self.seen:
            self.cmds.append((self.cur, self.link, self.control))
        if self.cmds:
            self.lists.append((self.cmds, False))
        return self.lists


def _execute(lists: list, st: _State, notes: list) -> list:
    """Run each list in order on the state; what may not run, or runs in a subshell, is merged as unknown."""
    out = []
    for cmds, background in lists:
        lst = st.copy() if background else st  # a background list never changes the shell
        after_andor = False
        pipe_base = lst
        for k, (toks, link, control) in enumerate(cmds):
            after_andor = after_andor or link in ("&&", "||")
            if link not in ("|", "|&"):
                pipe_base = lst.copy()
            next_link = cmds[k + 1][1] if k + 1 < len(cmds) else None
            piped = link in ("|", "|&") or next_link in ("|", "|&")
            conditional = after_andor or control
            if piped or conditional:
                sub = (pipe_base if piped else lst).copy()
                words, assigns = _run(toks, sub, notes)
                why = ("is assigned inside shell control flow" if control else
                       "is assigned inside a pipeline (a subshell in most shells)" if piped else
                       "is assigned after && or ||, so maybe not")
                _merge(lst, sub, why)
            else:
                words, assigns = _run(toks, lst, notes)
            out.append(SimpleCommand(words, assigns, background, piped, conditional))
    return out


_INTERNAL = "internal error while following the script"


def parse_script(script: str, env: Mapping[str, str | None],
                 positional: Sequence[str | None] = (), absent: str = "") -> ScriptResult:
    """The simple commands of a -c script with their words expanded as far as the Pod spec tells.

    env: the container's variables (None or ("unk", reason): defined, value unknown; ("shape", reason,
    nonempty): unknown, but one plain word, see _State); a name absent from env may be
    set by the image (or by `absent`: "envFrom ConfigMap x"), so it is unknown too. positional: ($0, $1,
    ...), None when unknown.
    """
    notes: list = []
    try:
        toks, _, error = _lex(script)
        if error:  # the shell rejects the line it cannot finish: keep the lines before it
            nl = max((k for k, t in enumerate(toks) if t[0] == "nl"), default=-1)
            toks = toks[: nl + 1]
        commands = _execute(_group(toks, notes), _initial_state(env, positional, absent), notes)
    except RecursionError:
        return ScriptResult((), "the script is nested too deeply to follow")
    except Exception:  # never raise on user input; tests assert this never happens
        return ScriptResult((), _INTERNAL)
    if error:
        notes.append(error)
    return ScriptResult(tuple(commands), notes[0] if notes else None)
