"""One assertion for a table of engine decisions (tests/engine): the outcome, then the effective
value (OK) or a word of the reason, and for UNKNOWN a registered cause naming what the reason names."""

from kubectl_kvcache.engine import OK, UNKNOWN, predict
from kubectl_kvcache.engine.cause import CAUSES


def assert_decision(engine, version, command, outcome, detail):
    p = predict({"name": "c", "command": command}, engine, version)
    assert p.outcome == outcome, p.reason
    if outcome == OK:
        assert p.effective == detail
    else:
        assert detail in p.reason
    if outcome == UNKNOWN:
        # the cause names what would decide it: the option (or file) the reason names
        assert p.cause is not None and p.cause.code in CAUSES, p
        assert p.cause.subject and p.cause.subject in p.reason, p.cause
    return p
