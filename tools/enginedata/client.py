"""Start and talk to oracle processes (oracle.py), one per engine release, batch protocol."""

import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import wheels  # noqa: E402


class OracleProcess:
    def __init__(self, engine, version, python=None, root=None):
        """`root`: the folder of the release's .py files; default its engine cache entry."""
        root = root or wheels.cached(engine, version)
        if root is None:
            raise FileNotFoundError(f"{engine}=={version} is not in the engine cache (run scripts/engine-wheels)")
        self.engine, self.version = engine, version
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # the engine cache keeps its own bytecode: faster starts
        self.proc = subprocess.Popen([python or sys.executable, os.path.join(HERE, "oracle.py"), engine, version, root],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, bufsize=1, env=env)
        hello = self.proc.stdout.readline()
        if not hello:
            raise RuntimeError(f"oracle {engine} {version} did not start")
        self.python = json.loads(hello)["python"]
        self.lock = threading.Lock()

    def ask_many(self, requests):
        """Answers for a list of requests, in order (all written, then all read, in chunks)."""
        out = []
        with self.lock:
            for k in range(0, len(requests), 200):
                chunk = requests[k:k + 200]
                self.proc.stdin.write("".join(json.dumps(r) + "\n" for r in chunk))
                self.proc.stdin.flush()
                for _ in chunk:
                    line = self.proc.stdout.readline()
                    if not line:
                        raise RuntimeError(f"oracle {self.engine} {self.version} died")
                    out.append(json.loads(line))
        return out

    def ask(self, request):
        return self.ask_many([request])[0]

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            self.proc.kill()
