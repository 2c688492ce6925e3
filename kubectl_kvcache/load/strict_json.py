"""JSON objects read without losing a key given twice: json keeps the last one silently, so an
untrusted file (a policy, an engine data file) could hide a value behind another."""
from __future__ import annotations


class DuplicateKey(ValueError):
    def __init__(self, key):
        super().__init__(key)
        self.key = key


def unique_pairs(pairs):
    """json.loads' object_pairs_hook: the object, or DuplicateKey naming the key given twice."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out
