"""recover --apply's last lines name the command that tells whether the window's step is done:
the Binding's replicas may still roll after the last step (issue 39 item 2)."""

import io

from kubectl_kvcache.render import recover as view


def test_finished_names_verify_wait():
    out = io.StringIO()
    view.finished(13, "/tmp/b", "configmap/llm-prod/kvcache-recover-x", "llm-prod", "kvcache-recover-x", out)
    text = out.getvalue()
    assert "Recovery finished: 13 steps done" in text
    assert "kubectl kvcache verify -n llm-prod --wait" in text
