"""The base of the plugin's value classes: fields named in `__slots__`, set by the class's own
plain `__init__`; equality, hashing, repr and `replace` over those fields.

Why not dataclasses: on the command line's path they cost more than the work at 100 Pods
(importing dataclasses, inspect and typing, then compiling five generated methods per class:
~1 ms a class, 58 classes). A class here costs ~10 µs to define and its instances are as fast
to build. Imports nothing, so engine/ may use it too.
"""


class Record:
    """A value object. Subclasses declare `__slots__` (the fields, in order) and an `__init__`
    taking them by those names; fields are not reassigned after `__init__` unless the class
    says it is mutable (it then sets `__hash__ = None`). `_uncompared`: fields left out of ==
    and hash (labels read only for selecting, say)."""

    __slots__: tuple[str, ...] = ()
    _uncompared: tuple[str, ...] = ()

    def _key(self):
        skip = self._uncompared
        return tuple(getattr(self, n) for n in self.__slots__ if n not in skip)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def _hash(self):
        return hash(self._key())

    # typed as object so that a mutable subclass's `__hash__ = None` type-checks
    __hash__: object = _hash  # type: ignore[assignment]

    def __repr__(self):
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{self.__class__.__qualname__}({fields})"

    def replace(self, **changes):
        """A copy with some fields changed, built through `__init__` (dataclasses.replace)."""
        unknown = set(changes) - set(self.__slots__)
        if unknown:
            raise TypeError(f"{self.__class__.__name__} has no field {sorted(unknown)[0]!r}")
        return self.__class__(**{n: changes[n] if n in changes else getattr(self, n) for n in self.__slots__})
