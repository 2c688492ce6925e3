"""scripts/engine-wheels' range reads (tools/enginedata/rangewheel.py) against a local server that
answers like PyPI (a JSON page, files with Range): the members kept are exactly the ones a full
download extracts, byte for byte, and far fewer bytes than the wheel are fetched."""

import http.server
import json
import os
import sys
import threading
import zipfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tools", "enginedata"))
import rangewheel  # noqa: E402
import wheels  # noqa: E402


class Handler(http.server.BaseHTTPRequestHandler):
    files: dict = {}
    ranges = True

    def do_GET(self):  # noqa: N802 - http.server's name
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        rng = self.headers.get("Range")
        if rng and self.ranges:
            start, end = (int(x) for x in rng.split("=")[1].split("-"))
            part = body[start:end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(body)}")
        else:
            part = body
            self.send_response(200)
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        self.wfile.write(part)

    def log_message(self, *args):
        pass


@pytest.fixture
def pypi(tmp_path, monkeypatch):
    whl = tmp_path / "eng-1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(12):
            zf.writestr(f"eng/mod{i}.py", f"X = {i}\n" * (50 + i))
            zf.writestr(f"eng/_kernel{i}.so", os.urandom(400_000), compress_type=zipfile.ZIP_STORED)
        zf.writestr("eng-1.0.dist-info/METADATA", "Name: eng\nVersion: 1.0\n")
        zf.writestr("../evil.py", "x")
    body = whl.read_bytes()
    page = {"releases": {"1.0": [{"filename": whl.name, "url": "../../files/" + whl.name, "size": len(body),
                                  "yanked": True}]}}
    Handler.files = {"/pypi/eng/json": json.dumps(page).encode(), "/files/" + whl.name: body}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.handle_error = lambda *a: None   # the refused response is cut off by the client
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(rangewheel, "INDEX", f"http://127.0.0.1:{server.server_port}/pypi")
    monkeypatch.setattr(rangewheel, "_PROJECTS", {})
    yield whl
    server.shutdown()


def tree(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, fs in os.walk(root) for f in fs}


def test_range_read_keeps_what_a_full_download_keeps(pypi, tmp_path):
    count, name, size, fetched, yanked = rangewheel.extract("eng", "1.0", str(tmp_path / "r"), wheels.kept)
    wheels.extract(str(pypi), str(tmp_path / "full"))
    assert tree(tmp_path / "r") == tree(tmp_path / "full")
    assert count == 13 and name == pypi.name and yanked
    assert fetched < size / 3   # the compiled members were never fetched


def test_a_server_without_range_support_is_refused_not_misread(pypi, tmp_path, monkeypatch):
    monkeypatch.setattr(Handler, "ranges", False)
    with pytest.raises(RuntimeError, match="no range support"):
        rangewheel.extract("eng", "1.0", str(tmp_path / "r"), wheels.kept)


def test_a_release_not_on_the_index_is_named(pypi, tmp_path):
    with pytest.raises(RuntimeError, match="eng==9.9 is not on PyPI"):
        rangewheel.extract("eng", "9.9", str(tmp_path / "r"), wheels.kept)
