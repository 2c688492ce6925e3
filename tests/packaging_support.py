"""What the packaging tier's test files share: a check that cannot run skips on a developer's
machine and fails under KVCACHE_REQUIRE_PACKAGING=1 (CI), and a bounded subprocess run."""

import os
import subprocess

import pytest


def skip_unless_required(reason):
    if os.environ.get("KVCACHE_REQUIRE_PACKAGING", "") not in ("", "0", "false", "no"):
        pytest.fail(f"{reason} (KVCACHE_REQUIRE_PACKAGING=1 is set)", pytrace=False)
    pytest.skip(reason)


def run(cmd, timeout=300, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
