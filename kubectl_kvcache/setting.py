"""Only until issue #20's branch is merged: tests/test_kube_config.py (rewritten there) imports
`setting.reverse_command` from here. The Setting's meaning is judge/setting.py; delete this
module when that test imports from its new home."""

from kubectl_kvcache.judge.setting import reverse_command  # noqa: F401
