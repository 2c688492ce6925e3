""""Did you mean this?" for a mistyped command or flag, as kubectl's command library words it.

cobra (spf13/cobra, command.go: Command.SuggestionsFor and findSuggestions) suggests every
command whose name is within SuggestionsMinimumDistance (2 unless set) of the typed word by
Levenshtein distance ignoring case (its `ld(typedName, cmd.Name(), true)`), or that the typed word
is a case-insensitive prefix of, and prints them after the error as "\\n\\nDid you mean
this?\\n\\t<name>\\n". pflag suggests nothing for an unknown flag; this plugin applies the same rule
to the long flags of the command being parsed (its choice: a flag is mistyped as often as a
command, and there are no abbreviations to fall back on).
"""

from __future__ import annotations

MINIMUM_DISTANCE = 2        # cobra: SuggestionsMinimumDistance's default


def distance(a: str, b: str) -> int:
    """Levenshtein distance, case-insensitive (cobra's ld with ignoreCase)."""
    a, b = a.lower(), b.lower()
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def suggestions(typed: str, names) -> list[str]:
    """The names cobra would suggest for `typed`, in the order given."""
    lowered = typed.lower()
    return [n for n in names if distance(typed, n) <= MINIMUM_DISTANCE or n.lower().startswith(lowered)]


def flag_suggestions(typed: str, flags) -> list[str]:
    """For a mistyped long flag (`--namspace`, `--namspace=x`): the long flags cobra's rule picks,
    compared without their dashes (so `-namespace` finds `--namespace`)."""
    word = typed.partition("=")[0]
    bare = word.lstrip("-")
    if not bare:
        return []
    longs = [f for f in flags if f.startswith("--")]
    return [f for f in longs if f[2:] in suggestions(bare, [g[2:] for g in longs])]


def text(found) -> str:
    """cobra's block, as it prints it after the error line ("" when there is nothing to suggest)."""
    if not found:
        return ""
    return "\n\nDid you mean this?\n" + "".join(f"\t{s}\n" for s in dict.fromkeys(found))
