"""The one exception type the CLI turns into a single stderr line and exit code 2."""


class PluginError(Exception):
    """The plugin could not do its job (bad flags, unreadable input, API refused or unreachable)."""

    # what kube/client.py learns of a request that failed (Client.settle): why its answer may
    # have been lost (a write the server may have applied), whether it went out whole, unanswered
    lost: str | None = None
    sent = False
    unanswered = False


class AlreadyDone(PluginError):
    """What the command would bring about is already so (recover of a Binding no engine rejects):
    the message is the result, on stdout, and the exit code is 0 ("done, or already in that
    state": README "Exit codes"), as `setting on` of a Setting already on."""


class Forbidden(PluginError):
    """RBAC refused a request; the message names the verb, resource and namespace."""


class NotFound(PluginError):
    """An API group, resource or object the command needs does not exist."""


class Conflict(PluginError):
    """The object changed since it was read (resourceVersion no longer matches)."""


class ExpiredContinue(PluginError):
    """410 Gone: a list's continue token (or a watch's resourceVersion) expired; the caller
    restarts from the beginning."""


class InvalidObject(PluginError):
    """An object read (from a file or the API) has a field of the wrong type or misses one it
    needs: names the object (`Pod ns/name`), the field path and the problem."""

    def __init__(self, what, path, problem):
        self.what, self.path, self.problem = what, path, problem
        super().__init__(f"{what}: missing {path}" if problem == "missing" else f"{what}: {path}: {problem}")

    def named(self, what):
        """This error with the object's name filled in (builders name objects only on error)."""
        return self if self.what is not None else InvalidObject(what, self.path, self.problem)

    def located(self, where, location):
        """The message for a file: the file, then the object (by its index in the file when it
        has no name to go by)."""
        what = self.what if " " in self.what or not location else f"{self.what} at {location}"
        return PluginError(f"{where}: {what}: missing {self.path}" if self.problem == "missing"
                           else f"{where}: {what}: {self.path}: {self.problem}")


# -- secrets never printed ---------------------------------------------------------------------
# Every token, password and key the run was given (flags, kubeconfig, token files, exec plugins)
# is registered here where it is read; render.core.line (every human line) replaces any of them
# with HIDDEN. The paths that print arguments are written not to echo them in the first place;
# this is the net under all of them. Values shorter than MIN_SECRET are not registered: hiding
# every "a" in a message would garble it, and such a value cannot be told from a word anyway.
HIDDEN = "(hidden)"
MIN_SECRET = 4
_SECRETS: set[str] = set()


def secret(value) -> None:
    """Register `value` (str or bytes) as a secret of this run: it is never printed."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    if isinstance(value, str):
        for part in {value, value.strip()}:
            if len(part) >= MIN_SECRET:
                _SECRETS.add(part)


def known_secrets() -> frozenset[str]:
    """The secrets registered so far (a worker process sends them to the parent that prints)."""
    return frozenset(_SECRETS)


def forget_secrets() -> None:
    """A new run (cli.main) starts knowing no secret (tests run many in one process)."""
    _SECRETS.clear()


def without_secrets(text: str) -> str:
    """`text` with every registered secret replaced by HIDDEN (longest first)."""
    if not _SECRETS:
        return text
    for value in sorted(_SECRETS, key=len, reverse=True):
        if value in text:
            text = text.replace(value, HIDDEN)
    return text
