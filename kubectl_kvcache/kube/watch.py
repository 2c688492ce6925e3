"""Following one collection from a list's resourceVersion, in a thread of its own, as client-go's
reflector does: resumed when the server ends the watch, listed again on 410 Gone, reconnected
with backoff. `verify --watch/--wait` (cli/flows/verify.py) runs one per list it follows."""

from __future__ import annotations

import os
import threading
import time

from kubectl_kvcache.errors import ExpiredContinue, Forbidden, NotFound, PluginError

WATCH_SECONDS = 300         # the server ends each watch after this long; it is then resumed
MAX_RECONNECTS = 5          # consecutive failed watch connections before giving up
MAX_RELISTS = 5             # consecutive 410 Gone (resourceVersion too old) before giving up
BACKOFF = 0.5               # seconds before the first reconnect; doubled each time, at most 10 s


def watch_seconds():
    """How long the server keeps each watch open (KVCACHE_WATCH_SECONDS, else WATCH_SECONDS)."""
    value = os.environ.get("KVCACHE_WATCH_SECONDS", "")
    return int(value) if value.isdigit() and int(value) > 0 else WATCH_SECONDS


class Watcher(threading.Thread):
    """Follows one collection from a list's resourceVersion: events go to `events` as
    (key, type, record); bookmarks only move the resourceVersion; a watch the server ends is
    resumed; 410 Gone lists again (a RELIST event with every record); connection failures are
    retried with backoff, MAX_RECONNECTS in a row at most; a refusal ends it with an error event.
    Ctrl-C (which closes its connection under it) ends it quietly: the main thread reports it."""

    def __init__(self, client, target, version, events, stop, seconds, chunk=None):
        super().__init__(daemon=True, name=f"watch-{target.key}")
        self.client, self.target, self.version = client, target, version
        self.events, self.stop, self.seconds, self.chunk = events, stop, seconds, chunk

    def run(self):
        try:
            self._follow()
        except KeyboardInterrupt:       # Ctrl-C aborted the watch's connection: the main thread says so
            pass
        except BaseException as exc:    # noqa: B902 - a bug: reported by the main thread, never a traceback here
            if not self.stop.is_set():
                self._fail(exc)

    def _follow(self):
        failures = relists = 0
        target = self.target
        while not self.stop.is_set():
            started, seen = time.monotonic(), 0
            try:
                for kind, obj in self.client.watch(target.path, self.version, target.selector, self.seconds,
                                                   what=target.what, fields=target.fields):
                    seen += 1
                    version = (obj.get("metadata") or {}).get("resourceVersion")
                    if version:
                        self.version = version
                    failures = 0
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        relists = 0
                        try:
                            record = target.convert(obj)
                        except PluginError as exc:      # a malformed object: no reconnect mends it
                            self._fail(exc)
                            return
                        self.events.put((target.key, kind, record))
                    if self.stop.is_set():
                        return
                if not seen and time.monotonic() - started < 1.0:
                    # the server ended the watch at once (client-go's "very short watch"): back off
                    raise PluginError(f"{target.what}: the API server ended the watch at once")
            except ExpiredContinue:
                relists += 1
                if relists > MAX_RELISTS:
                    self._fail(PluginError(f"{target.what}: the resourceVersion kept expiring (410 Gone "
                                           f"{MAX_RELISTS} times in a row)"))
                    return
                try:
                    kw = {} if self.chunk is None or target.fields else {"chunk": self.chunk}
                    records, self.version = self.client.list_versioned(
                        target.path, target.convert, selector=target.selector, fields=target.fields,
                        what=target.what.replace("watch", "list", 1), **kw)
                except PluginError as exc:
                    self._fail(exc)
                    return
                self.events.put((target.key, "RELIST", records))
            except (Forbidden, NotFound) as exc:
                self._fail(exc)
                return
            except PluginError as exc:
                failures += 1
                if failures > MAX_RECONNECTS:
                    self._fail(PluginError(f"{exc} (gave up after {MAX_RECONNECTS} reconnects)"))
                    return
                self.events.put((target.key, "RECONNECT", str(exc)))
                self.stop.wait(min(BACKOFF * 2 ** failures, 10.0))

    def _fail(self, exc):
        self.events.put((self.target.key, "ERROR", exc))
