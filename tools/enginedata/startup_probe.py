"""The start-up checks a release runs on the parsed argv, probed as combinations (issue 29).

Runs inside an oracle process (oracle.py `combos`), never in the plugin.

1. Groups, from the checks' own code: every statement of the functions the entry point runs after
   the parse (vLLM's validate_parsed_serve_args, validate_api_server_args, and the functions they
   hand the namespace to) reads some dests of the namespace; dests read in one statement belong to
   one group (union-find). The checks are a sequence of `if <dests>: raise`, so an argv dies iff
   the options of some group die together, whatever the other groups hold. A statement that
   hands the namespace to code that cannot be read, or writes to it, puts every dest in one group.
2. Rows, from the real entry point: per group, argv made of "atoms" (a no-value option, or a value
   option with a representative of one value class of kvparse.COMBO_CLASSES) are run through the
   real entry point, breadth first: from the group's empty argv, every combination of atoms for
   the dests the last run READ (a Namespace that records reads), so only what the checks really
   look at is multiplied. Each row keeps its outcome and the dests of the group it read: the
   model replays the same walk (a dest that was not read cannot change the run), and answers
   UNKNOWN for a combination no row holds.
"""

import ast
import inspect
import itertools
import sys
import textwrap

import fuzz_types

MAX_ATOMS = 4        # options given together in one row
MAX_ROWS = 120       # rows per group (the walk is breadth first: the fewest options first)
INTS = ("-1", "0", "1", "2", "4", "8")
INLINE_TEMPLATE = "{{ messages }}"
# the registry each parser-name option is checked against by validate_api_server_args
# (vllm@0.10.2/vllm/entrypoints/openai/api_server.py:validate_api_server_args)
REGISTRIES = {"tool_call_parser": "ToolParserManager", "reasoning_parser": "ReasoningParserManager"}
OTHER_NAME = "no_such_parser"
# dests whose value decides whether the oracle runs validate_api_server_args at all (oracle.py
# _api_server_checks: no API server, or a plugin file imported first): they meet every group that
# reads a parser name, so no option of theirs gets a class (given: UNKNOWN)
GUARDS = ("headless", "tool_parser_plugin", "reasoning_parser_plugin")


# SGLang's registries of the same parser names: a class attribute (dict) of a class of its own
# (sglang@0.4.7/sglang/srt/server_args.py: choices=list(ReasoningParser.DetectorMap.keys()))
SGLANG_REGISTRIES = {"reasoning_parser": ("ReasoningParser", "DetectorMap"),
                     "tool_call_parser": ("FunctionCallParser", "ToolCallParserEnum")}


def sglang_registry(dest):
    """The names in SGLang's registry for `dest`, read from the modules the run imported, or None."""
    if dest not in SGLANG_REGISTRIES:
        return None
    cls_name, attr = SGLANG_REGISTRIES[dest]
    for module_name, mod in list(sys.modules.items()):
        if not module_name.startswith("sglang") or mod is None or not hasattr(mod, "__dict__"):
            continue
        cls = mod.__dict__.get(cls_name)
        if isinstance(cls, type) and cls.__module__ == module_name and isinstance(cls.__dict__.get(attr), dict):
            return sorted(str(n) for n in cls.__dict__[attr])
    return None


def registry(name):
    """The names registered with one of the engine's parser managers, or None."""
    for module_name, mod in list(sys.modules.items()):
        if not module_name.startswith("vllm") or mod is None:
            continue
        manager = mod.__dict__.get(name) if hasattr(mod, "__dict__") else None
        if manager is None or not isinstance(manager, type):
            continue
        if hasattr(manager, "list_registered"):
            return sorted(str(n) for n in manager.list_registered())
        for attr in ("tool_parsers", "reasoning_parsers"):
            if isinstance(getattr(manager, attr, None), dict):
                return sorted(str(n) for n in getattr(manager, attr))
    return None


# --- 1. groups from the code ---------------------------------------------------------------------

class _Reads(ast.NodeVisitor):
    def __init__(self, param, globals_, depth):
        self.param, self.globals, self.depth = param, globals_, depth
        self.dests, self.opaque = set(), False
        self.imports = {}

    def visit_ImportFrom(self, node):
        for alias in node.names:
            self.imports[alias.asname or alias.name] = (node.module, alias.name, node.level)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.param:
            if isinstance(node.ctx, ast.Store):
                self.opaque = True
            self.dests.add(node.attr)
        self.generic_visit(node)

    def visit_Call(self, node):
        func = node.func
        args = list(node.args) + [k.value for k in node.keywords]
        if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            target, name = node.args[0], node.args[1]
            if isinstance(target, ast.Name) and target.id == self.param:
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    self.dests.add(name.value)
                else:
                    self.opaque = True
                for extra in node.args[2:]:
                    self.visit(extra)
                return
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr", "vars"):
            if any(isinstance(a, ast.Name) and a.id == self.param for a in args):
                self.opaque = True
        handed = [k for k, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == self.param]
        if handed or any(isinstance(k.value, ast.Name) and k.value.id == self.param for k in node.keywords):
            callee = self._resolve(func)
            if callee is None or self.depth > 4 or not handed:
                self.opaque = True
            else:
                inner = statement_reads(callee, handed[0], self.depth + 1)
                if inner is None:
                    self.opaque = True
                else:
                    for dests, opaque in inner:
                        self.dests |= dests
                        self.opaque |= opaque
        self.generic_visit(node)

    def _resolve(self, func):
        import importlib
        if not isinstance(func, ast.Name):
            return None
        if func.id in self.imports:
            module, name, level = self.imports[func.id]
            try:
                package = self.globals.get("__package__") or self.globals.get("__name__", "").rpartition(".")[0]
                mod = importlib.import_module("." * level + (module or ""), package if level else None)
                return getattr(mod, name, None)
            except Exception:  # noqa: BLE001
                return None
        return self.globals.get(func.id)


def statement_reads(fn, position=0, depth=0):
    """[(dests, opaque)] per top-level statement of fn, whose parameter `position` is the namespace."""
    fn = inspect.unwrap(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if inspect.ismethod(fn):
        params = params[1:]
    if position >= len(params):
        return None
    out = []
    imports = {}
    for stmt in node.body:
        visitor = _Reads(params[position], fn.__globals__, depth)
        visitor.imports = imports   # imports earlier in the function are in scope
        spliced = _handed_on(stmt, params[position], visitor)
        if spliced is not None:
            out += spliced   # `check(args)` as a statement: its statements, one by one
            continue
        visitor.visit(stmt)
        out.append((visitor.dests, visitor.opaque))
    return out


def _handed_on(stmt, param, visitor):
    """The statements of the function a bare `f(args)` statement calls, or None."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    if call.keywords or len(call.args) != 1 or not (isinstance(call.args[0], ast.Name) and call.args[0].id == param):
        return None
    if visitor.depth > 4:
        return None
    callee = visitor._resolve(call.func)
    if callee is None:
        return None
    return statement_reads(callee, 0, visitor.depth + 1)


def groups(roots):
    """[sorted dests] per group, in the order the checks first read them; None: not readable."""
    statements = []
    for fn, position in roots:
        reads = statement_reads(fn, position)
        if reads is None:
            return None
        statements += reads
    if any(opaque for _, opaque in statements):
        merged = set().union(*(d for d, _ in statements))
        return [sorted(merged)] if merged else []
    parent = {}

    def find(d):
        while parent.setdefault(d, d) != d:
            d = parent[d]
        return d
    order = []
    for dests, _ in statements:
        dests = sorted(dests)
        for d in dests:
            if d not in parent:
                order.append(d)
            find(d)
        for d in dests[1:]:
            parent[find(d)] = find(dests[0])
    out = {}
    for d in order:
        out.setdefault(find(d), []).append(d)
    return [sorted(g) for g in out.values()]


# --- 2. rows from the real entry point ------------------------------------------------------------

def atoms_of(parser, dest, registries, checked):
    """[(option, class, argv words)] that stand for the values `dest` can take, per kvparse's
    COMBO_CLASSES: a no-value option ("flag"); a parser name ("registered", "empty", and "other"
    only where the oracle runs the registry check); an inline --chat-template ("inline"); an int
    option's small values. Other value options have no atom (the model answers UNKNOWN)."""
    out = []
    for action in parser._actions:
        if action.dest != dest or not action.option_strings or dest in GUARDS:
            continue
        kind = fuzz_types.action_kind(action, parser)
        name = next((n for n in action.option_strings if n.startswith("--")), action.option_strings[0])
        if kind in fuzz_types.NO_VALUE:
            for opt in action.option_strings:
                if opt.startswith("--"):
                    out.append((opt, "flag", [opt]))
            continue
        # (a short alias of a flag is the same flag: the model reads it through ALIASES)
        if kind != "store" or action.nargs not in (None, "?"):
            continue
        if dest in REGISTRIES and registries.get(dest):
            names = registries[dest]
            rep = "hermes" if "hermes" in names else ("deepseek_r1" if "deepseek_r1" in names else names[0])
            out.append((name, "registered", [name, rep]))
            out.append((name, "empty", [name, ""]))
            if checked:
                out.append((name, "other", [name, OTHER_NAME]))
        elif dest == "chat_template":
            out.append((name, "inline", [name, INLINE_TEMPLATE]))
        elif action.type is int:
            for value in INTS:
                out.append((name, value, [name + "=" + value]))
    return out


def key(atoms):
    return " ".join(sorted(a[0] if a[1] == "flag" else f"{a[0]}={a[1]}" for a in atoms)) or "-"


def probe_group(run, model_argv, dests, atoms):
    """{row key: (outcome, sorted dests of the group it read)} over the breadth-first walk."""
    by_dest = {}
    for atom in atoms:
        by_dest.setdefault(atom[3], []).append(atom)
    rows, todo, done = {}, [()], set()
    while todo and len(rows) < MAX_ROWS:
        chosen = todo.pop(0)
        k = key(chosen)
        if k in done:
            continue
        done.add(k)
        argv = list(model_argv)
        for atom in chosen:
            argv += atom[2]
        answer, read = run(argv)
        outcome = "ok" if answer.get("outcome") == "ok" else "dies: " + str(answer.get("error") or answer.get("outcome"))[:160]
        read_here = sorted(set(read) & set(dests))
        rows[k] = (outcome, read_here)
        have = {a[3] for a in chosen}
        new = [d for d in read_here if d not in have and d in by_dest]
        if not new or len(chosen) >= MAX_ATOMS:
            continue
        # every way of giving (or not) each newly read dest
        for picks in itertools.product(*[[None] + by_dest[d] for d in new]):
            extra = tuple(p for p in picks if p is not None)
            if extra and len(chosen) + len(extra) <= MAX_ATOMS:
                todo.append(chosen + extra)
    return rows, len(todo) == 0


def combos(run, parser, model_argv, roots, registries, checked, read_dests):
    """What engine_data stores for one entry point: the groups, each option's group and class,
    and the rows. `read_dests`: every dest the start-up code read in describe's runs."""
    found = groups(roots)
    if found is None:
        return None
    out_groups, classes, rows, complete = [], {}, {}, {}
    for dests in found:
        gid = dests[0]
        atoms = []
        for dest in dests:
            for opt, cls, words in atoms_of(parser, dest, registries, checked):
                atoms.append((opt, cls, words, dest))
                classes[opt] = f"{gid} {dest} {'flag' if cls == 'flag' else kind_of(cls, dest)} {opt}"
            for alias, canonical in aliases(parser, dest).items():
                if canonical in classes and alias not in classes:
                    classes[alias] = " ".join(classes[canonical].split(" ")[:3] + [canonical])
        if not atoms:
            continue
        got, whole = probe_group(run, model_argv, dests, atoms)
        rows[gid] = got
        complete[gid] = whole
        out_groups.append(dests)
    return {"groups": out_groups, "classes": classes, "rows": rows, "complete": complete,
            "registries": registries, "checked": checked}


def aliases(parser, dest):
    """{short option string: the long one it stands for} for the actions of `dest` (a flag's short
    alias stands for its positive `--` form, never a `--no-` one)."""
    out = {}
    for action in parser._actions:
        if action.dest != dest:
            continue
        longs = [n for n in action.option_strings if n.startswith("--") and not n.startswith("--no-")]
        for name in action.option_strings:
            if not name.startswith("--") and longs:
                out[name] = longs[0]
    return out


def kind_of(cls, dest):
    if dest in REGISTRIES:
        return "registry"
    if dest == "chat_template":
        return "inline"
    return "int"

