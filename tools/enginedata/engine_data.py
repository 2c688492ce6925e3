"""scripts/engine-data: read every conformance release's REAL parser and write (--write) or check
(--check, the default) kubectl_kvcache/engine/parsers.json: per engine, the sampled releases, the
--kv-cache-dtype values each accepts, every option of the parser that reads it with its arity, and
the positionals of each entry point. Each fact is stored as spans of sampled releases
[first, until) so the file stays small; releases.py turns it into a Profile.
"""

import argparse
import concurrent.futures
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(os.path.dirname(HERE)))
ROOT = os.path.dirname(os.path.dirname(HERE))

from client import OracleProcess  # noqa: E402
from releases import RELEASES  # noqa: E402
from fuzz_types import PROBES  # noqa: E402
from startup_probe import GUARDS  # noqa: E402

ENTRIES = {"vllm": ("api_server", "serve"), "sglang": ("launch_server", "sglang_serve")}

# Behaviours of an entry point's own argv preparation, each decided by running one argv through
# the real entry point: (engine, entry, argv, the answer that means "has it").
BEHAVIOUR_PROBES = {
    # sglang serve MODEL ...: a first word that is not an option is the model path
    "serve_positional_model": ("sglang", "sglang_serve", ["m"], "ok"),
    # vllm serve --served-model-name x m: "`model` should be provided as the first positional argument"
    "served_name_before_model_refused": ("vllm", "serve", ["--served-model-name", "x", "--port", "8000", "m"], "dies"),
}


# Argv the -O rewriting of each release is read from (after the model words): what the release's
# parse_args hands to argparse for each, compared with kvparse.rewrite_o's replay of a rule.
REWRITE_PROBES = [["-O3"], ["-O", "3"], ["-O=3"], ["-O.level=3"], ["-O.mode=3"], ["-O", "x"], ["-Odecode"],
                  ["-O"], ["-O="], ["-O", "03"], ["-O_x"], ["-O", "-O3"], ["-O3", "-O.x=1"], ["--port", "-O3"],
                  ["--", "-O2"], ["-O", '{"level": 3}']] + [["-O", str(d)] for d in range(10)]
MODEL_WORDS = {"serve": ["m"], "api_server": ["--model", "m"], "launch_server": ["--model-path", "m"],
               "sglang_serve": ["--model-path", "m"]}


def _o_candidates(handed_o3, handed_digits):
    """Rules of kvparse's -O vocabulary that the real answers to `-O3` and `-O <d>` suggest."""
    digits = ",".join(sorted({d for d, tail in handed_digits if tail != ["-O", d]}))
    out = []
    if handed_o3 and len(handed_o3) == 2 and handed_o3[0] == "-O":
        try:
            doc = json.loads(handed_o3[1])
        except ValueError:
            doc = None
        if isinstance(doc, dict) and len(doc) == 1:
            out.append(f"dotted {next(iter(doc))} {digits}")
    if handed_o3 and len(handed_o3) == 2 and handed_o3[0].startswith("--") and handed_o3[1] == "3":
        out.append(f"option {handed_o3[0]} {digits}")
    return out + ["none"]


def rewrites(oracle, engine, version):
    """{"-O": rule}: the kvparse.rewrite_o rule that replays, on every REWRITE_PROBES argv at every
    entry point, the argv the release's own preparation hands to argparse; "opaque" if none does."""
    from kubectl_kvcache.engine import kvparse
    from kubectl_kvcache.engine.releases import parse_version, profile
    prof = profile(engine, parse_version(version))
    real = {}
    for entry in ENTRIES[engine]:
        answers = oracle.ask_many([{"prepared": entry, "argv": MODEL_WORDS[entry] + tail} for tail in REWRITE_PROBES])
        if answers[0].get("outcome") == "absent":
            continue
        real[entry] = [a.get("handed") for a in answers]
    if not real:
        return {}
    entry = ENTRIES[engine][0] if ENTRIES[engine][0] in real else next(iter(real))
    n = len(MODEL_WORDS[entry])
    tails = [h[n:] if h is not None else None for h in real[entry]]
    digits = [(tail[1], t) for tail, t in zip(REWRITE_PROBES, tails) if len(tail) == 2 and tail[0] == "-O"
              and tail[1].isdigit() and len(tail[1]) == 1]

    def replays(rule):
        for e, handed in real.items():
            for tail, want in zip(REWRITE_PROBES, handed):
                try:
                    got = kvparse.prepared_texts(MODEL_WORDS[e] + tail, prof, e, {"-O": rule})
                except kvparse._Stop:
                    got = None
                if got != want:
                    return False
        return True
    return {"-O": next((rule for rule in _o_candidates(tails[0], digits) if replays(rule)), "opaque")}


def behaviours(oracle, engine):
    probes = [(n, p) for n, p in sorted(BEHAVIOUR_PROBES.items()) if p[0] == engine]
    answers = oracle.ask_many([{"entry": p[1], "argv": p[2]} for _, p in probes])
    return {n: a.get("outcome") == p[3] for (n, p), a in zip(probes, answers) if a.get("outcome") != "absent"}


# An option names a file in the image when its help speaks of a path and a file AND its own name
# says so (SGLang's --hicache-storage-backend help mentions its `file` backend and a module path).
_FILE_NAME = re.compile(r"(file|template|certs|path)(-|$)")


def descriptor(name, row):
    """An option's action and value type as the model's vocabulary says it (kvparse.TYPES), or
    "" where the model need not know more (a no-value flag, or a value any string satisfies)."""
    from kubectl_kvcache.engine.kvparse import classify_type
    kind = row["action"]
    if kind in ("store_true", "store_false", "store_const", "append_const", "count", "boolean", "flag"):
        return ""
    words = [kind]
    if "probes" in row:
        words.append(classify_type(row["probes"], PROBES))
    if row.get("file") and _FILE_NAME.search(name):
        words.append("file")
    text = " ".join(words)
    return "" if text in ("store str", "append str", "extend str") else text


def action_rule(row):
    """The kvparse.action_accepts rule of an engine-own Action, matched on what the real Action
    did with each probe (fuzz_types.probe_action), or None (not replayed: its values are UNKNOWN)."""
    from kubectl_kvcache.engine.kvparse import classify_action
    from fuzz_types import ACTION_MULTI, ACTION_PROBES
    answers = row.get("action_probes")
    if row.get("action") != "custom" or not answers or len(answers) != len(ACTION_PROBES) + len(ACTION_MULTI):
        return None
    if row.get("const_probe", "1") != "1":
        return None   # given without a value (nargs "?"), the Action refuses its own const
    return classify_action(answers, ACTION_PROBES, ACTION_MULTI)


def describe_release(engine, version, root=None):
    """What the real parser of one release says (root: its .py files, default its cache entry)."""
    oracle = OracleProcess(engine, version, root=root)
    try:
        answers = oracle.ask_many([{"describe": entry} for entry in ENTRIES[engine]])
        found = behaviours(oracle, engine)
        rewritten = rewrites(oracle, engine, version)
        combos = dict(zip(ENTRIES[engine], oracle.ask_many([{"combos": entry} for entry in ENTRIES[engine]])))
        schemas = oracle.ask({"schemas": ENTRIES[engine][0]}) if engine == "vllm" else {}
    finally:
        oracle.close()
    out = {}
    for entry, answer in zip(ENTRIES[engine], answers):
        if answer is None:
            continue
        if "options" not in answer:
            raise RuntimeError(f"{engine} {version} {entry}: {answer}")
        out[entry] = answer
    out["_behaviours"] = found
    out["_rewrites"] = rewritten
    out["_combos"] = {e: c for e, c in combos.items() if c and "groups" in c}
    out["_schemas"] = schemas if isinstance(schemas, dict) and "outcome" not in schemas else {}
    return out


def spans(releases, present):
    """[[value, first, until-or-None], ...] from {release: value} over the sampled releases."""
    rows, current = [], None
    for release in releases:
        value = present.get(release)
        if current is not None and current[0] != value:
            current[2] = release
            current = None
        if value is not None and current is None:
            current = [value, release, None]
            rows.append(current)
    return rows


def build(described):
    data = {"_": "generated by scripts/engine-data from the released wheels' own parsers; do not edit"}
    for engine, releases in RELEASES.items():
        per = described[engine]
        primary = ENTRIES[engine][0]
        values, options, positionals, checks, differs, required, option_choices = {}, {}, {}, {}, {}, {}, {}
        kinds, start_up, found, rewritten, actions, fixed, start_up_values = {}, {}, {}, {}, {}, {}, {}
        for version in releases:
            for family, rule in (per[version].get("_rewrites") or {}).items():
                rewritten.setdefault(family, {})[version] = rule
            main = per[version][primary]
            for name, row in main.get("actions", {}).items():
                rule = action_rule(row)
                if rule:
                    actions.setdefault(name, {})[version] = rule
                word = descriptor(name, row)
                if word:
                    kinds.setdefault(name, {})[version] = word
                if row.get("choices") and not name.startswith("--kv"):
                    option_choices.setdefault(name, {})[version] = " ".join(row["choices"])
            for name, has in (per[version].get("_behaviours") or {}).items():
                if has:
                    found.setdefault(name, {})[version] = True
            # an option only another entry point's parser has (vllm serve's -dpr in 0.9.0): its
            # kind from that parser; two entry points that differ on it: not replayed ("custom")
            own = {}
            for entry, desc in per[version].items():
                if entry.startswith("_") or entry == primary:
                    continue
                for name, row in desc.get("actions", {}).items():
                    if name not in main["options"]:
                        word = descriptor(name, row)
                        own[name] = word if own.get(name, word) == word else "custom"
            for name, word in sorted(own.items()):
                if word:
                    kinds.setdefault(name, {})[version] = word
            for entry, desc in per[version].items():
                if entry.startswith("_"):
                    continue
                alone = desc.get("start_up_alone", {})
                for name, table in (desc.get("start_up_values") or {}).items():
                    shown = {v: "ok" if e is None else "dies: " + str(e)[:160] for v, e in table.items()}
                    start_up_values.setdefault(f"{entry} {name}", {})[version] = json.dumps(shown, sort_keys=True)
                for dest, names in desc.get("start_up_reads", {}).items():
                    for name in names:
                        outcome = alone.get(name, "reads") if name in alone else "reads"
                        if name in alone:
                            outcome = "ok" if alone[name] is None else "dies: " + str(alone[name])[:160]
                        start_up.setdefault(f"{entry} {name}", {})[version] = outcome
            accepted = main["choices"] if main["choices"] is not None else main["validator"]
            if main["choices"] is not None:
                checks[version] = "parse"
            elif main["validator"] is not None:
                checks[version] = "start"
            for value in accepted or ():
                values.setdefault(value, {})[version] = True
            for name, arity in main["options"].items():
                options.setdefault(name, {})[version] = arity
            for name in main["required"]:
                required.setdefault(name, {})[version] = True
            for name, values_of in main["option_choices"].items():
                option_choices.setdefault(name, {})[version] = " ".join(values_of)
            for name, source in (main.get("fixed_choices") or {}).items():
                if name in main["option_choices"]:
                    fixed.setdefault(name, {})[version] = source
            for entry, desc in per[version].items():
                if entry.startswith("_"):
                    continue
                positionals.setdefault(entry, {})[version] = " ".join(desc["positionals"]) or "-"
                if entry == primary:
                    continue
                # where another entry point's parser differs: its arity there, "-" for absent
                for name in set(desc["options"]) | set(main["options"]):
                    mine = desc["options"].get(name, "-")
                    if mine != main["options"].get(name, "-"):
                        differs.setdefault(entry, {}).setdefault(name, {})[version] = mine
        data[engine] = {
            "releases": releases,
            "values": {v: [s[1:] for s in spans(releases, p)] for v, p in sorted(values.items())},
            "value_check": spans(releases, checks),
            "options": {o: spans(releases, p) for o, p in sorted(options.items())},
            "required": {o: [s[1:] for s in spans(releases, p)] for o, p in sorted(required.items())},
            "choices": {o: spans(releases, p) for o, p in sorted(option_choices.items())},
            "fixed_choices": {o: spans(releases, p) for o, p in sorted(fixed.items())},
            "positionals": {e: spans(releases, p) for e, p in sorted(positionals.items())},
            "entry_options": {f"{e} {o}": spans(releases, p) for e in sorted(differs)
                              for o, p in sorted(differs[e].items())},
            "probes": PROBES,
            "kinds": {o: spans(releases, p) for o, p in sorted(kinds.items())},
            "start_up": {k: spans(releases, p) for k, p in sorted(start_up.items())},
            "start_up_values": {k: spans(releases, p) for k, p in sorted(start_up_values.items())},
            "behaviours": {b: [s[1:] for s in spans(releases, p)] for b, p in sorted(found.items())},
            "rewrites": {f: spans(releases, p) for f, p in sorted(rewritten.items())},
            "actions": {o: spans(releases, p) for o, p in sorted(actions.items())},
        }
        data[engine].update(build_combos(releases, per, data[engine]["start_up"]))
        data[engine]["schemas"] = build_schemas(releases, per)
    return data


def _loaded(doc):
    try:
        return json.loads(doc)
    except ValueError:
        return None


def schema_data(sch):
    """What the model keeps of one option's schema (kvparse.judge_document): the fields whose type
    the replay matched on every generated document of that field ("any" for the others, "free" for
    one that took every value it was given: vLLM 0.9's `cls(**json.loads(x))` checks no type),
    the coupled fields, forbid, optional, and the real answers where the replay does not judge:
    documents of one field the replay leaves open (a nested config's field, a lax pydantic value),
    documents of at most two coupled fields whose values are not of the wrong type, and documents
    that are not objects."""
    from kubectl_kvcache.engine.kvparse import ANY_STRING, DIGITS, _field_accepts, _has_literal
    fields = dict(sch["fields"])
    coupled = set(sch["coupled"])
    tested = dict(sch.get("tested") or {})
    single = {}
    for doc, real in sch["docs"].items():
        try:
            loaded = json.loads(doc)
        except ValueError:
            continue
        if isinstance(loaded, dict) and len(loaded) == 1:
            (name, value), = loaded.items()
            if name not in fields:
                continue
            single.setdefault(name, []).append(real)
            replay = _field_accepts(fields[name], value)
            # a value of the wrong type is refused by pydantic before __post_init__ runs; a right
            # one is judged alone only for a field no check of the class reads
            if (replay is False and real) or (replay is True and not real and name not in coupled):
                fields[name] = "any"
    for name, answers in single.items():
        if name not in coupled and len(answers) >= 8 and all(answers):
            fields[name] = "free"
    # an int field no check reads that took every plain decimal string it was probed with (pydantic's
    # lax mode: `"kv_port": "30000"`): kvparse judges such a string as that field's number
    digits = {}
    for doc, real in sch["docs"].items():
        loaded = _loaded(doc)
        if isinstance(loaded, dict) and len(loaded) == 1:
            (name, value), = loaded.items()
            if name in fields and re.sub(r"(>=|>)-?[0-9]+$", "", fields[name].lstrip("?")) == "int" and \
                    name not in coupled and \
                    isinstance(value, str) and DIGITS.fullmatch(value):
                digits.setdefault(name, []).append(real)
    lax_digits = sorted(n for n, answers in digits.items() if len(answers) >= 4 and all(answers))
    # a tested field (schema_probe.tested_fields) is kept only where its type is still a string's
    tested = {n: t for n, t in tested.items() if n in coupled and fields.get(n, "").lstrip("?") == "str"}
    # ... and only where every probed document agrees with the same one holding its stand-in (the
    # reading of the checks is held to the real callable: a connector name the class did look up
    # would show here)
    for doc, real in sch["docs"].items():
        loaded = _loaded(doc)
        if not isinstance(loaded, dict) or not set(loaded) & set(tested):
            continue
        stand_in = {k: ANY_STRING if k in tested and isinstance(v, str) and (v or tested[k] == "null") else v
                    for k, v in loaded.items()}
        other = sch["docs"].get(json.dumps(stand_in, sort_keys=True))
        if other is not None and other != real:
            for k in set(loaded) & set(tested):
                tested.pop(k, None)
    kept = {}
    for doc, real in sch["docs"].items():
        try:
            loaded = json.loads(doc)
        except ValueError:
            loaded = None
        if not isinstance(loaded, dict):
            kept[doc] = 1 if real else 0
        elif len(loaded) == 1 and set(loaded) <= set(fields) and set(loaded) - coupled and all(
                _field_accepts(fields[k], v) is None for k, v in loaded.items()):
            kept[json.dumps(loaded, sort_keys=True)] = 1 if real else 0
        elif loaded and len(loaded) <= 2 and set(loaded) <= coupled and all(
                _field_accepts(fields[k], v) is not False for k, v in loaded.items()):
            kept[json.dumps(loaded, sort_keys=True)] = 1 if real else 0
        elif loaded and set(loaded) <= coupled and set(loaded) & set(tested) and all(
                v in (None, "", ANY_STRING) if k in tested else _field_accepts(fields[k], v) is not False
                for k, v in loaded.items()):
            # the coupled fields with each tested one's stand-in: what judge_document maps a string to
            kept[json.dumps(loaded, sort_keys=True)] = 1 if real else 0
    # a nested config (its class's fields, pydantic-validated: "obj" kept) that refuses a key it
    # does not have, whatever the rest holds: probed with an empty document and an unknown key
    nested, ignored = {}, {}
    for name, inner in (sch.get("nested") or {}).items():
        if fields.get(name) != "obj":
            continue
        empty = sch["docs"].get(json.dumps({name: {}}, sort_keys=True))
        unknown = sch["docs"].get(json.dumps({name: {"zz_no_such_field": 1}}, sort_keys=True))
        if empty is True and unknown is False:
            nested[name] = sorted(inner["fields"])
        elif empty is True and unknown is True and inner.get("extra") in (None, "ignore"):
            # pydantic drops a key the class does not have (extra="ignore", its default): the
            # document is judged without it
            ignored[name] = sorted(inner["fields"])
    out = {"f": fields, "c": sorted(coupled), "x": bool(sch["forbid"]), "o": bool(sch["optional"]),
           "d": dict(sorted(kept.items()))}
    if tested:
        out["t"] = dict(sorted(tested.items()))
    if lax_digits:
        out["ld"] = lax_digits
    unknown = [sch["docs"].get(json.dumps({"zz_no_such_field": v})) for v in (1, True, None)]
    read_as_json = any(real and _has_literal(loaded) for doc, real in sch["docs"].items()
                       for loaded in [_loaded(doc)] if isinstance(loaded, dict))
    if not read_as_json and unknown[0] is True and unknown[1:] == [False, False]:
        out["p"] = 1   # the document is read as a Python literal: JSON's true/false/null refused
    if not read_as_json:
        ignored = {}   # not known to be read as JSON: no key is dropped
    if nested:
        out["n"] = nested
    if ignored:
        out["ni"] = ignored
    return out


def build_schemas(releases, per):
    """{option: spans of its schema (schema_data) as JSON text} for every config-class option
    (all of them since issue 38: --eplb-config, --profiler-config, ... are in launch commands too;
    a release's schema equal to the one before it costs nothing, spans)."""
    found = {}
    for version in releases:
        first = {}
        schemas = per[version].get("_schemas") or {}
        for name, sch in sorted(schemas.items(), key=lambda kv: not kv[0].startswith("--")):
            if sch["class"] in first:   # another spelling of the same option (-cc): a pointer to it
                found.setdefault(name, {})[version] = "=" + first[sch["class"]]
                continue
            first[sch["class"]] = name
            found.setdefault(name, {})[version] = json.dumps(schema_data(sch), sort_keys=True,
                                                             separators=(",", ":"))
    return {k: spans(releases, p) for k, p in sorted(found.items())}


def build_combos(releases, per, start_up_data):
    """The start-up checks' combinations (startup_probe.py) as spans: "combo_classes" ("<entry>
    <option>" -> "<group> <dest> <class kind>"), "combo_rows" ("<entry> <group> <atoms>" ->
    "<outcome>|<dests of the group the run read>"), "combo_registries" (dest -> the parser names
    registered). Every dest a row read joins "start_up" as "reads" (the model never ignores an
    option the checks read)."""
    classes, rows, registries, reads = {}, {}, {}, {}
    for version in releases:
        for entry, found in (per[version].get("_combos") or {}).items():
            dests = {}
            for name, row in per[version][entry].get("actions", {}).items():
                dests.setdefault(row["dest"], []).append(name)
            for name, text in found["classes"].items():
                if text.split(" ")[1] not in GUARDS:
                    classes.setdefault(f"{entry} {name}", {})[version] = text
            classed = {text.split(" ")[1] for text in found["classes"].values()}
            for gid, got in found["rows"].items():
                for key, (outcome, read) in list(got.items())[:COMBO_ROWS]:
                    outcome = _short(outcome)
                    for dest in read:
                        for name in dests.get(dest, ()):
                            reads.setdefault(f"{entry} {name}", {})[version] = "reads"
                    # the model needs only the dests of options with a class (another one given is UNKNOWN)
                    read = [d for d in read if d in classed]
                    rows.setdefault(f"{entry} {gid} {key}", {})[version] = outcome + "|" + ",".join(read)
            for dest, names in found["registries"].items():
                registries.setdefault(dest, {})[version] = " ".join(names)
    start_up = {k: dict((v, o) for o, first, until in rows_ for v in _between(releases, first, until))
                for k, rows_ in start_up_data.items()}
    for k, at in reads.items():
        for version, outcome in at.items():
            start_up.setdefault(k, {}).setdefault(version, outcome)
    return {"start_up": {k: spans(releases, p) for k, p in sorted(start_up.items())},
            "combo_classes": {k: spans(releases, p) for k, p in sorted(classes.items())},
            "combo_rows": {k: spans(releases, p) for k, p in sorted(rows.items())},
            "combo_registries": {k: spans(releases, p) for k, p in sorted(registries.items())}}


# rows kept per group, in the walk's order (the fewest options first): a combination past them is
# UNKNOWN. The -dp group of vLLM >= 0.24 (--data-parallel-multi-port-external-lb's own checks) has
# hundreds; commands combine a few.
COMBO_ROWS = 48


def _short(outcome):
    """A row's outcome, its message cut before a registry's list of names (combo_registries has it)."""
    return outcome.split(" (chose from", 1)[0][:140]


def _between(releases, first, until):
    return releases[releases.index(first):releases.index(until) if until else None]


def dump(data):
    """parsers.json: one option per line (engine -> table -> entry), for reviewable diffs; the format
    is described in docs/engines.md ("The engine data")."""
    from generated import render
    # the engines' tables only: build()'s "_" line was the module docstring's, now "written_by"
    return render({k: v for k, v in data.items() if isinstance(v, dict)}, "scripts/engine-data", expand=3)


def generate(jobs=2, save=None):
    described = {e: {} for e in RELEASES}
    errors = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(describe_release, e, v): (e, v) for e, vs in RELEASES.items() for v in vs}
        for fut in concurrent.futures.as_completed(futures):
            e, v = futures[fut]
            try:
                described[e][v] = fut.result()
            except Exception as exc:  # noqa: BLE001 - all of them reported below
                errors.append(f"{e} {v}: {str(exc)[:300]}")
    if errors:
        raise RuntimeError("engine-data: releases whose parser could not be read:\n" + "\n".join(sorted(errors)))
    if save:
        with open(save, "w") as f:
            json.dump(described, f)
    return dump(build(described))


def schemas_only(jobs=2):
    """parsers.json with only its vLLM "schemas" table read again from every release's config classes
    (schema_probe.py through the real parser), the other tables as they are: the schema probe alone
    takes minutes where the whole generation takes far longer. The default check still compares
    the whole file with every release's parser."""
    from generated import target
    with open(target("parsers")) as f:
        data = json.load(f)["data"]

    def ask(version):
        oracle = OracleProcess("vllm", version)
        try:
            answer = oracle.ask({"schemas": ENTRIES["vllm"][0]})
        finally:
            oracle.close()
        return {"_schemas": answer if isinstance(answer, dict) and "outcome" not in answer else {}}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        per = dict(zip(RELEASES["vllm"], pool.map(ask, RELEASES["vllm"])))
    data["vllm"]["schemas"] = build_schemas(RELEASES["vllm"], per)
    return dump(data)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write parsers.json instead of checking it")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--described", help="read (or, with --save, write) the parsers' descriptions from/to this "
                                        "JSON file instead of asking every release again")
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--schemas", action="store_true",
                    help="read only the vLLM config classes' schemas again (the other tables as they are)")
    args = ap.parse_args(argv)
    if args.schemas:
        text = schemas_only(args.jobs)
    elif args.described and not args.save:
        with open(args.described) as f:
            text = dump(build(json.load(f)))
    else:
        text = generate(args.jobs, args.described)
    from generated import write_or_compare
    return write_or_compare(["--write"] if args.write else [], "parsers", text, "scripts/engine-data")


if __name__ == "__main__":
    sys.exit(main())
