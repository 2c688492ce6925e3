"""Issue 30 item 9: "did you mean" for a mistyped command or flag, by cobra's rule (spf13/cobra
command.go SuggestionsFor: Levenshtein distance <= 2 ignoring case, or a prefix), one `error:`
line, exit 2."""

import pytest
from runcli import kvcache

from kubectl_kvcache.cli import suggest


@pytest.mark.parametrize("a, b, d", [("", "", 0), ("verify", "verify", 0), ("verfy", "verify", 1),
                                     ("VERIFY", "verify", 0), ("chek", "check", 1), ("kitten", "sitting", 3),
                                     ("abc", "", 3), ("recvoer", "recover", 2)])
def test_levenshtein_distance_ignoring_case(a, b, d):
    assert suggest.distance(a, b) == d == suggest.distance(b, a)


def test_cobra_suggests_by_distance_or_prefix():
    names = ["verify", "check", "bindings", "roles", "setting", "recover", "engines", "completion", "version"]
    assert suggest.suggestions("verfy", names) == ["verify"]
    assert suggest.suggestions("ver", names) == ["verify", "version"]          # a prefix of both
    assert suggest.suggestions("rol", names) == ["roles"]
    assert suggest.suggestions("zzzzzz", names) == []
    assert suggest.suggestions("setings", names) == ["setting"]


@pytest.mark.parametrize("argv, prog, want", [
    (["verfy"], "kubectl kvcache", ["verify"]),
    (["bindngs", "-A"], "kubectl kvcache", ["bindings"]),
    (["verify", "--namspace", "x"], "kubectl kvcache verify", ["--namespace"]),
    (["verify", "--wach"], "kubectl kvcache verify", ["--watch", "--wait"]),
    (["check", "--all-namespace"], "kubectl kvcache check", ["--all-namespaces"]),
    (["setting", "of"], "kubectl kvcache setting", ["on", "off"]),
])
def test_a_mistyped_command_or_flag_says_what_was_meant(argv, prog, want):
    code, out, err = kvcache(*argv)
    assert code == 2 and out == ""
    assert err.count("error:") == 1 and err.startswith("error: unknown ")
    assert "\n\nDid you mean this?\n" + "".join(f"\t{w}\n" for w in want) + "\nSee '" + prog in err


def test_nothing_near_is_no_suggestion():
    code, _, err = kvcache("verify", "--zzzzzzzzzz")
    assert code == 2 and err == "error: unknown flag: --zzzzzzzzzz\nSee 'kubectl kvcache verify --help' for usage.\n"
    code, _, err = kvcache("qqqqqqqq")
    assert code == 2 and "Did you mean" not in err and 'unknown command "qqqqqqqq" for "kubectl kvcache"' in err


def test_the_typed_word_is_escaped():
    code, _, err = kvcache("ver\x1bfy")
    assert code == 2 and "\x1b" not in err and err.count("error:") == 1
