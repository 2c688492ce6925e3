"""The plugin's real entry point run in-process with its own streams: (exit code, stdout, stderr)."""

import io

from kubectl_kvcache import cli


def kvcache(*argv, stdin=""):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), io.StringIO(stdin), out, err)
    return code, out.getvalue(), err.getvalue()
