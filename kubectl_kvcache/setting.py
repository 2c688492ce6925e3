"""The operator's Setting model-deployment-kv-cache-dtype-owned: what its value means.

Pure: the value as the operator reads it (Go's strconv.ParseBool), its default, and the
one-line meaning shown to users.
"""

from typing import Optional

from kubectl_kvcache.snapshot import Setting

DEFAULT = True
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")

MEANING = {
    True: "on: the operator hands each Binding's dtype to the engine as --kv-cache-dtype and refuses roles "
          "and Pods that pass the flag themselves",
    False: "off: the operator renders no --kv-cache-dtype and refuses nothing",
}


def parse_bool(text) -> Optional[bool]:
    """Go's strconv.ParseBool: exactly these spellings, anything else is None (refused)."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def effective_value(setting: Optional[Setting]) -> Optional[bool]:
    """The value the operator acts on: status.value, or the default when unset; None if unreadable."""
    if setting is None or setting.status_value is None:
        return DEFAULT
    return parse_bool(setting.status_value)
