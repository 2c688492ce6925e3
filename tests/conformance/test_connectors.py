"""KV-connector launch commands (issue 52 item 3), the tuned part: realcmds/connectors.yaml, from
the connector projects' repositories (LMCache, NIXL, llm-d, Mooncake), through the real parsers (see
connector_rows.py). No definite answer the release contradicts; the decided rate is reported in
the terminal summary ("KV-connector launch commands")."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "realcmds"))

import build  # noqa: E402
import connector_rows as rows  # noqa: E402
import isolate  # noqa: E402
import test_realcmds as tuned  # noqa: E402
import tierstats as tier  # noqa: E402

ENTRIES = build.load(build.CONNECTORS)


@pytest.fixture(autouse=True)
def _sandbox():
    isolate.require()


@pytest.mark.parametrize("engine,version", [pytest.param(e, v, id=f"{e}-{v}") for e, v in rows.PARAMS])
def test_connectors_release(oracles, engine, version):
    rows.check_release(oracles, engine, version, ENTRIES, tier.CONNECTORS, "connectors")


def test_connectors_corpus_is_sourced_new_and_apart():
    """From files neither corpus.yaml nor heldout.yaml took a command from, no repository shared
    between the tuned and the held-out part, every row carrying a KV connector's options, each
    command once."""
    others = {(e["source"]["repo"], e["source"]["path"]) for e in tuned.corpus() + build.load(build.HELDOUT)}
    held = build.load(build.CONNECTORS_HELDOUT)
    mine = {e["source"]["repo"] for e in ENTRIES}
    assert len(ENTRIES) >= 20 and len(mine) >= 4 and len(held) >= 20
    assert not {(e["source"]["repo"], e["source"]["path"]) for e in ENTRIES + held} & others
    assert not mine & {e["source"]["repo"] for e in held}
    ids = [e["id"] for e in ENTRIES + held]
    assert len(set(ids)) == len(ids)
    import connectors
    for e in ENTRIES + held:
        assert connectors.KV.search(str([e.get(k) for k in ("command", "args", "line")])), e["id"]
        assert len(e["source"]["commit"]) == 40, e["id"]


def summary_lines():
    return rows.summary("KV-connector launch commands, tuned part (realcmds/connectors.yaml)", ENTRIES,
                        tier.CONNECTORS)
