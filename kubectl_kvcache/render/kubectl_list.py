"""What `kubectl get` hands its printers, for the plugin's kubectl-style formats (-o jsonpath,
jsonpath-file, custom-columns, custom-columns-file, name) and --sort-by: the document's rows
re-wrapped as kubectl's v1 List (kubectl/pkg/cmd/get/get.go printGeneric: every object gathered
into `{"apiVersion": "v1", "items": [...], "kind": "List", "metadata": {"resourceVersion": ""}}`),
its items as Go's unstructured JSON decoding holds them, sorted as get/sorter.go sorts them.

So a template reads what it would read from `kubectl get`: `{.items[*].pod}`, never the
report's summary fields (those are -o json's: `verdict`, `setting`, ...)."""

from __future__ import annotations

import json
import re
from fractions import Fraction

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.render import jsonpath


def as_list(items) -> dict:
    """The List printGeneric builds, each item through a JSON round trip (Go holds decoded JSON:
    a tuple becomes a list, an int beyond int64 a float)."""
    decoded = json.loads(json.dumps(list(items)), parse_int=_go_int)
    return {"apiVersion": "v1", "items": decoded, "kind": "List", "metadata": {"resourceVersion": ""}}


def listed(data, sort_by=None) -> dict:
    """A report's structured form as kubectl get's printers get it: its rows (render/kubeobject.py)
    in a v1 List, sorted by --sort-by."""
    from kubectl_kvcache.render import kubeobject

    listing = as_list(kubeobject.rows(data))
    if sort_by:
        listing["items"] = _sorted(listing["items"], sort_by)
    return listing


def sort_document(data, sort_by):
    """-o json|yaml with --sort-by: the document with its rows sorted as kubectl sorts a list."""
    from kubectl_kvcache.render import kubeobject

    data = kubeobject.document(data)
    if not isinstance(data, dict):
        return data
    key = kubeobject.rows_key(data)
    if not isinstance(data.get(key), list):
        return data
    rows = data[key]
    decoded = as_list(rows)["items"]
    order = sort_items(list(range(len(rows))), sort_by, decoded)
    return {**data, key: [rows[i] for i in order]}


def _sorted(items, sort_by):
    return [items[i] for i in sort_items(list(range(len(items))), sort_by, items)]


def _go_int(text: str):
    """Go's unstructured decoding: an integer that fits int64 is int64, else float64."""
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else float(text)


# -- --sort-by (kubectl/pkg/cmd/get/sorter.go) ------------------------------------------------

_RELAXED = re.compile(r"^\{\.?([^{}]+)\}$|^\.?([^{}]+)$", re.S)


def relaxed(expression: str) -> str:
    """customcolumn.go RelaxedJSONPathExpression: `a.b`, `.a.b`, `{a.b}` and `{.a.b}` all become
    `{.a.b}`; "" stays ""."""
    if expression == "":
        return expression
    match = _RELAXED.match(expression)
    if match is None:
        raise jsonpath.JSONPathError("unexpected path string, expected a 'name1.name2' or '.name1.name2' or "
                                     "'{name1.name2}' or '{.name1.name2}'")
    return "{.%s}" % (match.group(1) or match.group(2))


def sort_items(items: list, field: str, keyed: list | None = None) -> list:
    """sorter.go SortObjects and RuntimeSort: the field (relaxed) found in at least one item, else
    `couldn't find any field with path ...`; items ordered by sort.Sort with RuntimeSort.Less (an
    item without the field first); ties and the unordered pairs Less allows (two items without the
    field) ordered as Go's insertion sort leaves them (sort.Sort's algorithm for up to 12 items;
    for more, pdqsort: see pdqsort below)."""
    if not items:
        return items
    path = relaxed(field)
    parser = jsonpath.JSONPath(path, allow_missing_keys=True)
    keys = []
    for item in (keyed if keyed is not None else items):
        try:
            found = parser.find(item)
        except jsonpath.JSONPathError as exc:
            raise PluginError(str(exc)) from None
        keys.append(found[0][0] if found and found[0] else _MISSING)
    if all(k is _MISSING for k in keys):
        raise PluginError(f'couldn\'t find any field with path "{path}" in the list of objects')
    order = list(range(len(items)))

    def less(i, j):
        a, b = keys[order[i]], keys[order[j]]
        if a is _MISSING:
            return True
        if b is _MISSING:
            return False
        return _is_less(a, b)

    def swap(i, j):
        order[i], order[j] = order[j], order[i]

    try:
        pdqsort(less, swap, len(order))
    except Unsortable as exc:       # kubectl: klog.Exitf's line (sorter.go RuntimeSort.Less), exit 1
        raise PluginError(f"Field {path} in *unstructured.Unstructured is an unsortable type: interface, "
                          f"err: {exc}") from None
    return [items[i] for i in order]


_MISSING = object()


class Unsortable(jsonpath.JSONPathError):
    """sorter.go isLess's error (kubectl exits through klog.Exitf)."""


def _is_less(a, b) -> bool:
    """sorter.go isLess on two decoded values (reflect.Interface: nil first; same-typed numbers;
    two strings as quantities when both parse (resource.ParseQuantity), else sortorder.NaturalLess)."""
    if a is None and b is None:
        return False
    if a is None:
        return True
    if b is None:
        return False
    if isinstance(a, bool):
        raise Unsortable("unsortable type: bool")
    if isinstance(a, int):
        if isinstance(b, int) and not isinstance(b, bool):
            return a < b
        raise Unsortable("unsortable interface: interface")
    if isinstance(a, float):
        if isinstance(b, float):
            return a < b
        raise Unsortable("unsortable interface: interface")
    if isinstance(a, str):
        if isinstance(b, str):
            qa, qb = quantity(a), quantity(b)
            if qa is None or qb is None:
                return natural_less(a, b)
            return qa < qb
        raise Unsortable("unsortable interface: interface")
    raise Unsortable(f"unsortable type: {jsonpath._go_type(a)}")


def natural_less(s1: str, s2: str) -> bool:
    """github.com/fvbommel/sortorder NaturalLess, on the UTF-8 bytes: digit runs compared as
    numbers (leading zeros ignored, then fewer zeros first), digits before other bytes."""
    a, b = s1.encode("utf-8"), s2.encode("utf-8")
    i = j = 0
    while i < len(a) and j < len(b):
        c1, c2 = a[i], b[j]
        d1, d2 = 48 <= c1 <= 57, 48 <= c2 <= 57
        if d1 != d2:
            return d1
        if not d1:
            if c1 != c2:
                return c1 < c2
            i += 1
            j += 1
            continue
        while i < len(a) and a[i] == 48:
            i += 1
        while j < len(b) and b[j] == 48:
            j += 1
        nz1, nz2 = i, j
        while i < len(a) and 48 <= a[i] <= 57:
            i += 1
        while j < len(b) and 48 <= b[j] <= 57:
            j += 1
        if i - nz1 != j - nz2:
            return i - nz1 < j - nz2
        if a[nz1:i] != b[nz2:j]:
            return a[nz1:i] < b[nz2:j]
        if nz1 != nz2:
            return nz1 < nz2
    return len(a) < len(b)


_QUANTITY = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_SUFFIX = {"": Fraction(1), "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6), "m": Fraction(1, 1000),
           "k": Fraction(10 ** 3), "M": Fraction(10 ** 6), "G": Fraction(10 ** 9), "T": Fraction(10 ** 12),
           "P": Fraction(10 ** 15), "E": Fraction(10 ** 18), "Ki": Fraction(2 ** 10), "Mi": Fraction(2 ** 20),
           "Gi": Fraction(2 ** 30), "Ti": Fraction(2 ** 40), "Pi": Fraction(2 ** 50), "Ei": Fraction(2 ** 60)}


def quantity(text: str):
    """apimachinery resource.ParseQuantity's value (exact), or None when it does not parse: a
    sign, digits with an optional fraction (at least one digit), then a binary or decimal SI
    suffix or a decimal exponent."""
    match = _QUANTITY.match(text)
    if match is None:
        return None
    sign, whole, frac, suffix = match.group(1), match.group(2), match.group(3), match.group(4) or ""
    if not whole and not frac:
        return None
    value = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    if suffix[:1] in ("e", "E"):
        value *= Fraction(10) ** int(suffix[1:])
    else:
        value *= _SUFFIX[suffix]
    return -value if sign == "-" else value


# -- Go's sort.Sort (sort/sort.go, sort/zsortinterface.go: pdqsort) -----------------------------

def pdqsort(less, swap, n: int) -> None:
    """sort.Sort(data): pdqsort with insertion sort below 12 elements, exactly as Go runs it, so
    that equal keys (and the pairs RuntimeSort.Less calls less both ways) end where kubectl's do."""
    if n <= 1:
        return
    limit = n.bit_length()
    _pdq(less, swap, 0, n, limit)


def _insertion(less, swap, a, b):
    for i in range(a + 1, b):
        j = i
        while j > a and less(j, j - 1):
            swap(j, j - 1)
            j -= 1


def _sift_down(less, swap, lo, hi, first):
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and less(first + child, first + child + 1):
            child += 1
        if not less(first + root, first + child):
            return
        swap(first + root, first + child)
        root = child


def _heap_sort(less, swap, a, b):
    first, lo, hi = a, 0, b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(less, swap, i, hi, first)
    for i in range(hi - 1, -1, -1):
        swap(first, first + i)
        _sift_down(less, swap, lo, i, first)


def _pdq(less, swap, a, b, limit):
    max_insertion = 12
    was_balanced, was_partitioned = True, True
    while True:
        length = b - a
        if length <= max_insertion:
            _insertion(less, swap, a, b)
            return
        if limit == 0:
            _heap_sort(less, swap, a, b)
            return
        if not was_balanced:
            _break_patterns(swap, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(less, swap, a, b)
        if hint == _DECREASING:
            _reverse_range(swap, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = _INCREASING
        if was_balanced and was_partitioned and hint == _INCREASING:
            if _partial_insertion(less, swap, a, b):
                return
        if a > 0 and not less(a - 1, pivot):
            mid = _partition_equal(less, swap, a, b, pivot)
            a = mid
            continue
        mid, already = _partition(less, swap, a, b, pivot)
        was_partitioned = already
        left, right = mid - a, b - mid
        balance = length // 8
        if left < right:
            was_balanced = left >= balance
            _pdq(less, swap, a, mid, limit)
            a = mid + 1
        else:
            was_balanced = right >= balance
            _pdq(less, swap, mid + 1, b, limit)
            b = mid


def _partition(less, swap, a, b, pivot):
    swap(a, pivot)
    i, j = a + 1, b - 1
    while i <= j and less(i, a):
        i += 1
    while i <= j and not less(j, a):
        j -= 1
    if i > j:
        swap(j, a)
        return j, True
    swap(i, j)
    i += 1
    j -= 1
    while True:
        while i <= j and less(i, a):
            i += 1
        while i <= j and not less(j, a):
            j -= 1
        if i > j:
            break
        swap(i, j)
        i += 1
        j -= 1
    swap(j, a)
    return j, False


def _partition_equal(less, swap, a, b, pivot):
    swap(a, pivot)
    i, j = a + 1, b - 1
    while True:
        while i <= j and not less(a, i):
            i += 1
        while i <= j and less(a, j):
            j -= 1
        if i > j:
            break
        swap(i, j)
        i += 1
        j -= 1
    return i


def _partial_insertion(less, swap, a, b):
    max_steps, shortest_shifting = 5, 50
    i = a + 1
    for _ in range(max_steps):
        while i < b and not less(i, i - 1):
            i += 1
        if i == b:
            return True
        if b - a < shortest_shifting:
            return False
        swap(i, i - 1)
        if i - a >= 2:
            j = i - 1
            while j >= 1:
                if not less(j, j - 1):
                    break
                swap(j, j - 1)
                j -= 1
        if b - i >= 2:
            j = i + 1
            while j < b:
                if not less(j, j - 1):
                    break
                swap(j, j - 1)
                j += 1
    return False


def _break_patterns(swap, a, b):
    length = b - a
    if length >= 8:
        random = length & 0xFFFFFFFFFFFFFFFF      # xorshift seeded with the length
        modulus = 1 << length.bit_length()      # nextPowerOfTwo: 1 << bits.Len(length)
        idx = a + (length // 4) * 2 - 1
        for i in range(3):
            random ^= (random << 13) & 0xFFFFFFFFFFFFFFFF
            random ^= random >> 7
            random ^= (random << 17) & 0xFFFFFFFFFFFFFFFF
            other = random & (modulus - 1)
            if other >= length:
                other -= length
            swap(idx + i, a + other)


_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2


def _choose_pivot(less, swap, a, b):
    shortest_ninther, max_swaps = 50, 4 * 3
    length = b - a
    swaps = [0]
    i = a + length // 4 * 1
    j = a + length // 4 * 2
    k = a + length // 4 * 3
    if length >= 8:
        if length >= shortest_ninther:
            i = _median_adjacent(less, i, swaps)
            j = _median_adjacent(less, j, swaps)
            k = _median_adjacent(less, k, swaps)
        j = _median(less, i, j, k, swaps)
    if swaps[0] == 0:
        return j, _INCREASING
    if swaps[0] == max_swaps:
        return j, _DECREASING
    return j, _UNKNOWN


def _order2(less, a, b, swaps):
    if less(b, a):
        swaps[0] += 1
        return b, a
    return a, b


def _median(less, a, b, c, swaps):
    a, b = _order2(less, a, b, swaps)
    b, c = _order2(less, b, c, swaps)
    a, b = _order2(less, a, b, swaps)
    return b


def _median_adjacent(less, a, swaps):
    return _median(less, a - 1, a, a + 1, swaps)


def _reverse_range(swap, a, b):
    i, j = a, b - 1
    while i < j:
        swap(i, j)
        i += 1
        j -= 1
