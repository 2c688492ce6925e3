"""The one label-selector grammar: what -l accepts (validated before any request) and how saved
objects' labels match it, as the API server matches them (the cluster tier holds verify -l on
files and on a real API server to the same rows)."""

import pytest

from kubectl_kvcache.kube import selector as label_selector
from kubectl_kvcache.errors import PluginError

LABELS = {"app": "web", "tier": "front", "empty": ""}


@pytest.mark.parametrize("selector, expected", [
    ("app=web", True), ("app==web", True), ("app!=web", False), ("app=db", False), ("app", True), ("!app", False),
    ("nope", False), ("!nope", True), ("nope!=x", True), ("nope=x", False), ("app in (db, web)", True),
    ("app notin (db,web)", False), ("nope notin (a)", True), ("nope in (a)", False), ("app=web,tier=front", True),
    ("app=web,tier=back", False), ("app in (web),!nope,tier", True), ("empty=", True), ("empty", True),
    ("  app = web  ", True), ("", True)])
def test_matches_as_the_api_server_does(selector, expected):
    assert label_selector.matches(LABELS, selector) is expected


@pytest.mark.parametrize("selector", ["app=", "a/b=c", "x in (a,b)", "!x", "k notin ()", "a==b,c!=d"])
def test_well_formed_selectors_are_accepted(selector):
    label_selector.validate(selector)


@pytest.mark.parametrize("selector, what", [("app=web,", "an empty requirement"), ("=web", "'=web'"),
                                            ("app in web", "'app in web'"), ("a b", "'a b'"), ("app=w b", "'app=w b'"),
                                            ("-app", "'-app'")])
def test_a_malformed_selector_is_one_error_naming_the_requirement(selector, what):
    with pytest.raises(PluginError) as exc:
        label_selector.validate(selector)
    assert str(exc.value) == (f"invalid label selector {selector!r}: {what} is not k, !k, k=v, k!=v, "
                              f"k in (v1,v2) or k notin (v1,v2)")
