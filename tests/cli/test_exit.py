"""cli.run, the executables' entry point: the exit code is main's, the output is all there, a
reader that went away is one exit code and no traceback, and the interpreter's teardown is
skipped only when nothing is registered to run at exit."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")

TEARDOWN_PROBE = """
import sys
class Probe:
    def __del__(self):
        sys.stderr.write("teardown ran\\n")
probe = Probe()
{setup}
sys.argv = ["kubectl-kvcache"] + {argv!r}
from kubectl_kvcache.cli import run
run()
"""


def probe(argv, setup=""):
    return subprocess.run([sys.executable, "-c", TEARDOWN_PROBE.format(setup=setup, argv=argv)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_the_output_and_code_are_mains_and_the_teardown_is_skipped():
    p = probe(["verify", "-A", "-f", EXAMPLE, "-o", "json"])
    assert p.returncode == 1          # the example has findings
    assert p.stdout.endswith("}\n") and '"kind": "VerifyReport"' in p.stdout
    assert "teardown ran" not in p.stderr


def test_an_exit_handler_gets_the_normal_exit():
    p = probe(["version"], setup="import atexit; atexit.register(lambda: sys.stderr.write('handler ran\\n'))")
    assert p.returncode == 0 and p.stdout.startswith("kubectl-kvcache ")
    assert "handler ran" in p.stderr and "teardown ran" in p.stderr


def test_bad_input_keeps_its_exit_code():
    p = probe(["verify", "-f", os.path.join(ROOT, "no-such-file.json")])
    assert p.returncode == 2 and p.stderr.startswith("error: ")


def test_a_reader_that_went_away_is_a_quiet_141():
    """Issue 39 item 6: `| head` is not "could not do its job" (2): nothing on stderr, 141, the code a
    shell reports for kubectl killed by SIGPIPE (128 + 13)."""
    p = subprocess.Popen([sys.executable, "-m", "kubectl_kvcache", "verify", "-A", "-f", EXAMPLE, "-o", "json"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141
    assert err == "", err


def test_ctrl_c_before_main_handles_it_is_one_line_and_130():
    """Ctrl-C while the command's modules import, or during completion, reaches run() itself."""
    probe = ("from kubectl_kvcache.cli import app\n"
             "def entry():\n    raise KeyboardInterrupt\n"
             "app.run(entry)\n")
    p = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 130 and p.stdout == "" and p.stderr == "error: interrupted\n", p.stderr
