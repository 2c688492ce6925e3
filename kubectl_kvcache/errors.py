"""The one exception type the CLI turns into a single stderr line and exit code 2."""


class PluginError(Exception):
    """The plugin could not do its job (bad flags, unreadable input, API refused or unreachable)."""


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
