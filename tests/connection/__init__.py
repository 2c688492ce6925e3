"""The kubectl parity tier: the plugin connects where and as whom the real kubectl does (see
test_kubectl_parity.py; run alone with `python -m tests.connection`)."""
