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
