"""Scoring engine/words.py on start-up heads and /metrics lines users pasted in public issues and
files (tuned.json, heldout.json: each entry's `source` names where it was found). An entry is
`whole` when its text is the line(s) as the engine wrote them; else it was cut, wrapped or joined
where it was quoted, and the reader may leave it unread or read what it really says. `expect` is
the value of each report in order, as a person reads the line (a torch dtype for SGLang's line).

wrong: a report read as another value than it says (must be 0, whole or not);
read: whole entries whose every report is read, and read right."""

from __future__ import annotations

import json
import os

from kubectl_kvcache.engine import words

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    with open(os.path.join(HERE, f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


class Score:
    def __init__(self):
        self.whole = self.read = self.cut = self.cut_quiet = 0
        self.wrong: list = []
        self.unread: list = []
        self.per_format: dict = {}


def score(entries) -> Score:
    s = Score()
    for e in entries:
        got = words.reports(e["engine"], e["text"], e["where"], e["version"])
        values = [r.dtype or r.resolved for r in got if not r.why]
        for r in got:
            if r.why:
                continue
            if (r.dtype or r.resolved) not in e["expect"]:
                s.wrong.append((e["source"], r.format, r.dtype or r.resolved, e["expect"]))
        for r in got:
            counts = s.per_format.setdefault(r.format, [0, 0])
            counts[0 if not r.why else 1] += 1
        if e["whole"]:
            s.whole += 1
            if values == e["expect"] and len(got) == len(e["expect"]):
                s.read += 1
            else:
                s.unread.append((e["source"], [r.why for r in got if r.why], values))
        else:
            s.cut += 1
            s.cut_quiet += not values      # the rest read right (else counted wrong above)
    return s


def summary(name, s: Score) -> str:
    rate = s.read / s.whole if s.whole else 0.0
    formats = ", ".join(f"{k} {v[0]} read/{v[1]} not" for k, v in sorted(s.per_format.items()))
    return (f"{name}: {s.read}/{s.whole} whole entries read ({rate:.0%}), {len(s.wrong)} wrong; "
            f"{s.cut_quiet}/{s.cut} cut, wrapped or joined ones not read (the rest read right); per format: {formats}")
