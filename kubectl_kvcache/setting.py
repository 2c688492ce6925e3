"""Only until issue #20's branch is merged: tests/test_kube_config.py (rewritten there) imports
`setting.reverse_command` from here. It is cli/flows/setting.py's; delete this
module when that test imports from its new home."""

from kubectl_kvcache.cli.flows.setting import reverse_command  # noqa: F401
