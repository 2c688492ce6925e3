"""KV-connector launch commands (issue 52 item 3), the held-out part: realcmds/connectors_heldout.yaml,
whole repositories (connectors.py HELD_OUT) never tuned on, run last in the tier; the rate is
reported apart ("KV-connector launch commands, held out"), not held to a floor (a floor met by
tuning on these rows would make them tuned rows). A definite answer the release contradicts fails."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "realcmds"))

import build  # noqa: E402
import connector_rows as rows  # noqa: E402
import isolate  # noqa: E402
import tierstats as tier  # noqa: E402

ENTRIES = build.load(build.CONNECTORS_HELDOUT)


@pytest.fixture(autouse=True)
def _sandbox():
    isolate.require()


@pytest.mark.parametrize("engine,version", [pytest.param(e, v, id=f"{e}-{v}") for e, v in rows.PARAMS])
def test_connectors_heldout_release(oracles, engine, version):
    rows.check_release(oracles, engine, version, ENTRIES, tier.CONNECTORS_HELDOUT, "connectors held out")


def summary_lines():
    return rows.summary("KV-connector launch commands, held out by repository (realcmds/connectors_heldout.yaml)",
                        ENTRIES, tier.CONNECTORS_HELDOUT)
