"""Argv words that meet the start-up checks in combination (issue 29), for the fuzzer and the tier.

Drawn from every option the release's checks read (parsers.py "start_up", itself read from the
real entry points) with values of every kind the checks treat apart, and beyond the one value of
each class engine-data probed: any registered tool-call or reasoning parser name, empty and
unregistered names, templates inline and as paths, numbers inside and outside the probed ones,
the no-/disable- forms, companions of -dp, and the flags given twice in either order.
"""

from kubectl_kvcache.engine import data
from kubectl_kvcache.engine.releases import _in_spans, _sample, parse_version

INTS = ["-1", "0", "1", "2", "3", "4", "8", "16", "8000", "x"]
TEMPLATES = ["{{ messages }}", "{% for m in messages %}{{ m.content }}{% endfor %}", "a\nb",
             "/no/such/template.jinja", "template.jinja", "chatml", ""]
NAMES = ["", "no_such_parser", "Hermes", "hermes ", "auto"]


def read_options(engine, version, entry):
    """{option: (dest kind or "", registry names)} of the options the checks read at `entry`."""
    real = data.parsers()[engine]
    at = _sample(engine, parse_version(version))
    out = {}
    for key, rows in real.get("start_up", {}).items():
        e, name = key.split(" ", 1)
        if e == entry and _in_spans(at, rows):
            out[name] = ("", ())
    registries = {d: _in_spans(at, rows) for d, rows in real.get("combo_registries", {}).items()}
    for key, rows in real.get("combo_classes", {}).items():
        e, name = key.split(" ", 1)
        found = _in_spans(at, rows)
        if e == entry and found:
            dest, kind = found.split(" ")[1:3]
            out[name] = (kind, tuple((registries.get(dest) or "").split()))
    # the companions the issue names, whatever the data says about them
    for name in ("--enable-auto-tool-choice", "--tool-call-parser", "--chat-template", "--reasoning-parser",
                 "--enable-reasoning", "-dp", "--data-parallel-size", "-dpl", "--api-server-count", "--headless",
                 "--tool-parser-plugin"):
        if name in real["options"] and _in_spans(at, real["options"][name]):
            out.setdefault(name, ("", ()))
    return out


def words(rng, engine, version, entry, options=None):
    """1-4 options the start-up checks read, each with a value of a class they treat apart."""
    options = options or read_options(engine, version, entry)
    if not options:
        return []
    names = sorted(options)
    out = []
    tool = [n for n in ("--enable-auto-tool-choice", "--tool-call-parser") if n in options]
    if len(tool) == 2 and rng.random() < 0.4:
        chosen = tool + rng.sample(names, rng.choice([0, 0, 1, 2]))
    else:
        chosen = rng.sample(names, min(len(names), rng.choice([1, 1, 2, 2, 3, 4])))
    for name in chosen:
        kind, registered = options[name]
        arity = data.parsers()[engine]["options"].get(name)
        arity = _in_spans(_sample(engine, parse_version(version)), arity) if arity else "1"
        if arity == "0":
            out.append([name])
            continue
        value = _value(rng, name, kind, registered)
        out.append([f"{name}={value}"] if rng.random() < 0.3 else [name, value])
    if rng.random() < 0.1 and out:
        out.append(list(rng.choice(out)))   # one of them again
    rng.shuffle(out)
    return [w for ws in out for w in ws]


def _value(rng, name, kind, registered):
    if kind == "registry" or name in ("--tool-call-parser", "--reasoning-parser"):
        if registered and rng.random() < 0.7:
            return rng.choice(registered)
        return rng.choice(NAMES)
    if kind == "inline" or name == "--chat-template":
        return rng.choice(TEMPLATES)
    if kind == "int" or name.startswith("-dp") or "size" in name or "count" in name or "port" in name:
        return rng.choice(INTS)
    return rng.choice(["x", "", "1", "/tmp/x", "{}"])
