"""kubectl_kvcache/engine/crashes.json (what each release raises about the KV-cache dtype when it
dies, engine/crash.py) equals what the cached wheels say (tools/enginedata/crash_data.py): for
this run's slice of releases, the entries whose release spans hold the release are exactly the
ones read from its code. `scripts/engine-data --crashes` compares them all."""

import pytest

import crash_data  # noqa: E402  (tools/enginedata: conftest.py puts it on the path)
import wheels  # noqa: E402
from releases import RELEASES, TIER  # noqa: E402

from kubectl_kvcache.engine import knowledge

pytestmark = pytest.mark.conformance
DATA = knowledge.load("crashes")


def _holds(spans, version, order):
    at = order.index(version)
    return any(order.index(first) <= at <= order.index(last) for first, last in spans)


def _shipped(engine, version):
    order = RELEASES[engine]
    table = DATA.get(engine, {})
    pick = {kind: sorted(repr({k: v for k, v in e.items() if k != "releases"}) for e in table.get(kind, [])
                         if _holds(e["releases"], version, order))
            for kind in ("messages", "wrappers", "selector", "reasons")}
    return pick


@pytest.mark.parametrize("engine,version", [(e, v) for e in ("vllm", "sglang") for v in TIER[e]])
def test_the_shipped_crash_messages_equal_the_wheel(engine, version):
    messages, wrappers, sel = crash_data.read_release(engine, wheels.ensure(engine, version))
    read = {"messages": sorted(repr(e) for e in messages.values()),
            "wrappers": sorted(repr(e) for e in wrappers.values()),
            "selector": sorted(repr({"format": f}) for f in (sel or {}).get("formats", [])),
            "reasons": sorted({repr({"template": p, "dtype": d}) for p, d in (sel or {}).get("reasons", [])})}
    assert _shipped(engine, version) == read, \
        f"{engine} {version}: crashes.json differs from the wheel: run scripts/engine-data --crashes --write"
