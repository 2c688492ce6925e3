"""Held out (run last): the releases at odd positions of the engine data, which the decision
test (test_admission.py) does not check. The same comparison, reported apart."""

from admission_cel import decisions_agree, releases
from objects import binding, deployment


def test_zz_heldout_decisions_agree(tmp_path):
    objects = (binding("b", "fp8"), deployment("d", binding_name="b"))
    assert decisions_agree(tmp_path, releases()[1::2], objects) > 1000
