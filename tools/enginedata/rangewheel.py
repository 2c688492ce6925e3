"""A released wheel's kept files read straight from PyPI with HTTP range requests.

A vLLM wheel is 300-500 MB, nearly all of it compiled kernels; its .py files and METADATA are
a few MB. PyPI serves its files with `Range` (206 Partial Content), so the zip's central
directory is read from the end of the file, and only the kept members (wheels.kept) are fetched,
neighbouring ones in one request. The bytes are the wheel's own: every member is checked with
its CRC-32 by zipfile, exactly as after a full download (wheels.extract reads the same members).
"""

import json
import os
import urllib.parse
import urllib.request
import zipfile

INDEX = os.environ.get("KVCACHE_PYPI_JSON", "https://pypi.org/pypi")
MAX_JSON = 32 << 20        # a project's JSON page (vLLM's: ~260 KB)
GAP = 256 << 10            # members closer than this are fetched in one request
TIMEOUT = 120


def _get(url, start=None, end=None, limit=None):
    req = urllib.request.Request(url, headers={"User-Agent": "kubectl-kvcache-engine-wheels"})
    if start is not None:
        req.add_header("Range", f"bytes={start}-{end - 1}")
    with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
        if start is not None and resp.status != 206:
            raise RuntimeError(f"{url}: no range support (HTTP {resp.status})")
        body = resp.read(limit + 1 if limit else (end - start if start is not None else -1))
    if limit and len(body) > limit:
        raise RuntimeError(f"{url}: larger than {limit} bytes")
    return body


_PROJECTS = {}


def project(engine):
    """PyPI's JSON page of a project (its `releases`: version -> files), read once per process."""
    if engine not in _PROJECTS:
        url = f"{INDEX}/{engine}/json"
        _PROJECTS[engine] = (url, json.loads(_get(url, limit=MAX_JSON)))
    return _PROJECTS[engine]


def wheel_file(engine, version):
    """(url, size, filename, yanked) of the release's x86_64 Linux (or pure) wheel on PyPI."""
    url, page = project(engine)
    files = page.get("releases", {}).get(version)
    if files is None:
        raise RuntimeError(f"{engine}=={version} is not on PyPI")
    wheels = [f for f in files if f["filename"].endswith(".whl")
              and ("x86_64" in f["filename"] or f["filename"].endswith("-any.whl"))]
    if not wheels:
        raise RuntimeError(f"{engine}=={version}: PyPI has no x86_64 or pure wheel")
    f = sorted(wheels, key=lambda f: f["filename"])[0]
    return urllib.parse.urljoin(url, f["url"]), int(f["size"]), f["filename"], bool(f.get("yanked"))


class RangeFile:
    """A read-only, seekable file over a URL: prefetched spans first, else one range request."""

    def __init__(self, url, size):
        self.url, self.size, self.pos, self.spans, self.requests, self.fetched = url, size, 0, [], 0, 0

    def prefetch(self, start, end):
        self.spans.append((start, _get(self.url, start, end)))
        self.requests += 1
        self.fetched += end - start

    def seek(self, offset, whence=0):
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def tell(self):
        return self.pos

    def seekable(self):
        return True

    def read(self, n=-1):
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        for start, data in self.spans:
            if start <= self.pos and end <= start + len(data):
                out = data[self.pos - start:end - start]
                break
        else:
            self.prefetch(self.pos, max(end, min(self.size, self.pos + (64 << 10))))
            out = self.spans[-1][1][:end - self.pos]
        self.pos = end
        return out


def extract(engine, version, tree, kept):
    """The kept members of the release's wheel written under `tree`; (count, wheel name, wheel
    size, bytes fetched, yanked)."""
    url, size, name, yanked = wheel_file(engine, version)
    rf = RangeFile(url, size)
    rf.prefetch(max(0, size - (1 << 20)), size)   # the central directory is at the end
    with zipfile.ZipFile(rf) as zf:
        infos = sorted(zf.infolist(), key=lambda i: i.header_offset)
        want = [i for i in infos if kept(i.filename)]
        ends = {a.header_offset: b.header_offset for a, b in zip(infos, infos[1:])}
        cd_start = zf.start_dir
        spans = []
        for i in want:
            s, e = i.header_offset, ends.get(i.header_offset, cd_start)
            if spans and s - spans[-1][1] <= GAP:
                spans[-1][1] = e
            else:
                spans.append([s, e])
        for s, e in spans:
            if e > s:
                rf.prefetch(s, min(e, size))
        for i in want:
            zf.extract(i, tree)
    return len(want), name, size, rf.fetched, yanked
