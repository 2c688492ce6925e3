"""The vocabularies kvparse replays engine-own behaviour with (the -O rewriting, the engines' own
argparse Actions): engine-data matches each release to a rule by what the real code did on probes
(tests/conformance); here, that a rule read back from data is self-consistent and that a rule the
plugin cannot read (an added release's file is untrusted) is never a definite answer."""

import dataclasses
import os
import sys

import pytest

from kubectl_kvcache.engine import kvparse
from kubectl_kvcache.engine.argv import Token

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tools", "enginedata"))

import fuzz_types  # noqa: E402

RULES = ["items any", "items bool", "items braces lora_name,lora_path", "items pairs first -", "items pairs exact -",
         "items pairs first name,path/base_model_name", "optional items pairs exact name,path/base_model_name"]


@pytest.mark.parametrize("rule", RULES)
def test_an_action_rule_is_recovered_from_its_own_answers(rule):
    # what a real Action answering exactly as `rule` would be matched to answers the same way
    items, multi = fuzz_types.ACTION_PROBES, fuzz_types.ACTION_MULTI
    answers = "".join("1" if kvparse.action_accepts(rule, v) else "0" for v in items)
    answers += "".join("1" if all(kvparse.action_accepts(rule, v) for v in m) else "0" for m in multi)
    found = kvparse.classify_action(answers, items, multi)
    assert found is not None
    assert [kvparse.action_accepts(found, v) for v in items] == [kvparse.action_accepts(rule, v) for v in items]


def test_items_its_type_refused_first_do_not_decide_the_actions_rule():
    # SGLang 0.5.14's DeprecatedAliasStoreAction with type=int: argparse's conversion refuses
    # every non-number before the Action runs ('-'); the Action stores whatever it is given
    items, multi = fuzz_types.ACTION_PROBES, fuzz_types.ACTION_MULTI
    answers = "".join("1" if k % 3 == 0 else "-" for k in range(len(items))) + "-" * len(multi)
    assert kvparse.classify_action(answers, items, multi) == "items any"
    # an Action that refuses a value its type took is still told apart
    assert kvparse.classify_action("0" + answers[1:], items, multi) != "items any"


def test_an_action_no_rule_fits_is_not_replayed():
    items, multi = fuzz_types.ACTION_PROBES, fuzz_types.ACTION_MULTI
    # takes only the 3rd item: no rule of the vocabulary answers so
    answers = "".join("1" if k == 2 else "0" for k in range(len(items))) + "0" * len(multi)
    assert kvparse.classify_action(answers, items, multi) is None


@pytest.mark.parametrize("rule", [None, 3, ["items", "any"], "", "items", "items pairs sideways -", "opaque:1"])
def test_an_unreadable_action_rule_answers_nothing(rule):
    assert kvparse.action_accepts(rule, "a=b") is None


@pytest.mark.parametrize("rule", [3, "dotted", "option --x", "sideways a b", "opaque"])
def test_an_unreadable_o_rule_is_unknown_at_an_o_token(rule):
    items = [kvparse._Item("m", Token("m", "args", 0)), kvparse._Item("-O3", Token("-O3", "args", 1))]
    with pytest.raises(kvparse._Stop) as stop:
        kvparse.rewrite_o(items, rule)
    assert stop.value.parse.outcome == kvparse.UNKNOWN
    # and leaves an argv without -O tokens alone
    assert kvparse.rewrite_o(items[:1], rule) == items[:1]


@pytest.mark.parametrize("text", ["{", "[]", '{"info": 1}', '{"info": "maybe"}', 7, None])
def test_an_unreadable_start_up_values_row_is_left_out(text):
    # an added release's file is untrusted: a row that is not {value: "ok" | "dies: ..."} is
    # dropped, so the option's values stay UNKNOWN rather than being decided from it
    rows = {"launch_server --log-level": [[text, "0.5.15", None]], "launch_server --x": [['{"a": "ok"}', "0.5.15", None]]}
    from kubectl_kvcache.engine.releases import parse_version
    assert kvparse._start_up_values(rows, parse_version("0.5.15")) == {("launch_server", "--x"): {"a": "ok"}}


# --- JSON config documents (issue 29): what judge_document does with the data's schema forms ----
SCHEMA = {"f": {"level": "int", "backend": "free", "pass_config": "obj", "cache": "obj", "role": "?str",
                "sizes": "?list:int", "ops": "list:str"},
          "c": ["pass_config", "role"], "x": True, "o": True,
          "d": {'{"pass_config": {}}': 1, '{"pass_config": {"a": true}}': 1, '{"pass_config": {"a": "True"}}': 0,
                '{"role": "kv_both"}': 1, '{"cache": {"k": 1}}': 0},
          "n": {"pass_config": ["a", "b"]}, "ni": {"cache": ["k"]}}


@pytest.mark.parametrize("doc, want", [
    ('{"level": 3}', True),
    ('{"level": [1], "backend": 1}', False),       # wrong JSON type, whatever else
    ('{"backend": [1, {"a": null}]}', True),         # "free": every probed value was taken
    ('{"zz": 1}', False),                            # extra="forbid"
    ('{"pass_config": {"a": true}}', True),          # a coupled nested config, probed
    ('{"pass_config": {"a": "True"}}', False),
    ('{"pass_config": {"b": true}}', None),          # not probed
    ('{"pass_config": {"zz": true}}', False),        # the nested config refuses a key it lacks
    ('{"pass_config": {"a": true}, "role": "kv_both"}', None),   # the coupled pair not probed
    ('{"cache": {"k": 1, "dropped": 2}}', False),    # the nested config drops "dropped"
    ('{"cache": {"k": 2}}', None),
    ("", True), ("[]", None), ('{"level": 1, "level": 2}', None),
    ('{"sizes": [1, 2, 4, 8], "level": 3}', True),   # a list field: each item as a field of its type
    ('{"sizes": null}', True), ('{"sizes": []}', True), ('{"ops": ["+rms_norm"]}', True),
    ('{"sizes": [1, 2.5]}', False), ('{"sizes": 8}', False), ('{"ops": "x"}', False), ('{"sizes": [null]}', False),
    ('{"sizes": [1, "2"]}', None),                   # pydantic's lax mode: not judged
])
def test_a_config_document_is_judged_only_where_the_data_settles_it(doc, want):
    why = []
    assert kvparse.judge_document(SCHEMA, doc, why) is want
    assert (want is None) == bool(why)


@pytest.mark.parametrize("schema", [{"f": {"p": "obj"}, "c": [], "d": {}, "n": "p", "ni": 3},
                                    {"f": {"p": "obj"}, "c": [], "d": {}, "n": {"p": "a"}, "ni": {"p": None}}])
def test_an_unreadable_nested_schema_is_never_a_definite_answer(schema):
    assert kvparse.judge_document(schema, '{"p": {"a": 1}}') is None


@pytest.mark.parametrize("text", ["{", "3", "[]", '{"f": {"a": 3}, "c": []}', '{"f": {"a": "int"}}',
                                  '{"f": [], "c": []}', '{"f": {"a": "int"}, "c": [1]}',
                                  '{"f": {"a": "int"}, "c": [], "d": {"x": "yes"}}', "=--missing"])
def test_an_unreadable_schema_is_left_out(text):
    # an added release's file is untrusted: a schema judge_document cannot read is dropped, so the
    # option's documents stay UNKNOWN instead of ending the run in a traceback
    from kubectl_kvcache.engine.releases import parse_version
    rows = {"--x": [[text, "0.20.0", None]], "--ok": [['{"f": {"a": "int"}, "c": []}', "0.20.0", None]]}
    assert kvparse._schemas(rows, parse_version("0.20.0")) == {"--ok": {"f": {"a": "int"}, "c": []}}


@pytest.mark.parametrize("name, value, want", [
    ("kvs-plain", "", True), ("kvs-plain", "image=2,video=1", True), ("kvs-plain", "a=1,a=2", True),
    ("kvs-plain", '{"image": 2}', False), ("kvs", "a=1,a=2", False), ("kvs", " Image = 3 ", True),
    ("kvs-strict", "", False), ("json|kvs", '{"image": 4}', True), ("json|kvs", "{x}", False),
    ("json|kvs", "image=2", True), ("optional|json|kvs", "None", True),
])
def test_the_key_value_forms_of_old_vllm(name, value, want):
    assert kvparse.type_accepts(name, value) is want


# --- issue 52: string fields the class's checks only test against None; lax digit strings ------
TESTED = {"f": {"kv_connector": "?str", "engine_id": "?str", "kv_role": "?lit:kv_producer|kv_both|kv_consumer",
                "kv_port": "int", "kv_connector_extra_config": "dict", "kv_load_failure_policy": "lit:recompute|fail"},
          "c": ["engine_id", "kv_connector", "kv_role"], "x": True, "o": True,
          "t": {"engine_id": "null", "kv_connector": "null"}, "ld": ["kv_port"],
          "d": {'{"kv_connector": "NixlConnector", "kv_role": "kv_both"}': 1,
                '{"kv_connector": "zz_any_string", "kv_role": "kv_both"}': 1,
                '{"kv_connector": "zz_any_string"}': 0,
                '{"engine_id": "zz_any_string", "kv_connector": "zz_any_string", "kv_role": "kv_producer"}': 1}}


@pytest.mark.parametrize("doc, want", [
    # a connector no factory registers: the checks only ask whether it is None
    ('{"kv_connector": "MooncakeConnectorV1", "kv_role": "kv_both", "kv_connector_extra_config": {"a.b": 1}}', True),
    ('{"kv_connector": "AscendStoreConnector"}', False),                        # no kv_role
    ('{"kv_connector": "", "kv_role": "kv_both"}', True),                       # "" is no None either
    ('{"kv_connector": "X", "kv_role": "kv_producer", "engine_id": "0", "kv_port": "30000"}', True),
    ('{"kv_connector": "X", "kv_role": "kv_consumer", "engine_id": "0"}', None),    # not probed
    ('{"kv_connector": "X", "kv_role": "kv_both", "kv_port": "3e4"}', None),   # lax, no plain digits
    ('{"kv_connector": "X", "kv_role": "kv_both", "kv_port": "030"}', None),
    ('{"kv_connector": "X", "kv_role": "kv_both", "kv_load_failure_policy": "retry"}', False),
    ('{"kv_connector": 1, "kv_role": "kv_both"}', False),
    ('{"kv_connector": "X", "kv_role": "kv_both", "kv_connector_extra_config": []}', False),
])
def test_a_string_the_checks_only_test_against_none_stands_for_every_string(doc, want):
    why = []
    assert kvparse.judge_document(TESTED, doc, why) is want
    assert (want is None) == bool(why)


def test_a_field_without_the_tested_mark_is_looked_up_as_given():
    schema = dict(TESTED, t={})
    assert kvparse.judge_document(schema, '{"kv_connector": "MooncakeConnectorV1", "kv_role": "kv_both"}') is None
    assert kvparse.judge_document(dict(TESTED, ld=[]), '{"kv_port": "30000"}') is None


def test_the_probe_and_the_model_share_the_stand_in():
    import schema_probe
    assert schema_probe.ANY_STRING == kvparse.ANY_STRING
    for text in ("0", "8", "30000", "14579", "2147483648", "123456789012345678"):
        assert kvparse.DIGITS.fullmatch(text) and text in schema_probe.LAX["int"]


@dataclasses.dataclass
class Config:
    __module__ = "vllm.config.example"   # schema_probe reads only the release's own checks
    name: str | None = None
    ident: str | None = None
    path: str = ""
    mode: str = "a"
    other: str | None = None

    @property
    def uses_mode(self):
        return self.mode in ("a", "b")

    def __post_init__(self):
        if self.ident is None:
            self.ident = "generated"
        if self.name is not None and not self.path:
            raise ValueError("path")
        if self.uses_mode and self.other is None:
            raise ValueError("other")


@dataclasses.dataclass
class Handed:
    __module__ = "vllm.config.example"
    name: str | None = None

    def __post_init__(self):
        check(self)


def check(config):
    return config


def test_the_checks_are_read_for_how_they_use_each_field():
    import schema_probe
    names = [f.name for f in dataclasses.fields(Config)]
    # mode is compared (through the property): never a stand-in
    assert schema_probe.tested_fields(Config, names) == {"name": "null", "ident": "null", "path": "truth",
                                                         "other": "null"}
    assert schema_probe.coupled_fields(Config, names) == set(names)
    assert schema_probe.tested_fields(Handed, ["name"]) == {}   # self handed on: not readable


@pytest.mark.parametrize("kind, value, want", [
    ("int>0", 1, True), ("int>0", 0, False), ("int>=0", 0, True), ("int>=0", -1, False), ("?int>=1", None, True),
    ("int>0", "5", None), ("int>0", 1.5, False), ("int>0", [1], False), ("float>0", 0.25, True), ("float>0", 0, False),
])
def test_a_bounded_number_is_judged_by_its_bound(kind, value, want):
    assert kvparse._field_accepts(kind, value) is want


def test_a_bound_is_read_from_the_field_constraint():
    import schema_probe

    class Gt:
        def __init__(self, gt):
            self.gt = gt

    class Ge:
        def __init__(self, ge):
            self.ge = ge
    assert schema_probe.bounded("int", [Gt(0)]) == "int>0"
    assert schema_probe.bounded("?int", [Ge(0)]) == "?int>=0"
    assert schema_probe.bounded("int", [Gt(0), Ge(1)]) == "int"      # two constraints: the plain type
    assert schema_probe.bounded("str", [Gt(0)]) == "str"


def test_a_refused_document_names_the_key_not_the_probe_answers():
    """0.34.0's KVTransferConfig has no kv_rank and refuses other keys (vllm/config/kv_transfer.py in
    the 0.34.0 wheel): the message names the key, never the opaque type's probe answers."""
    import json as _json

    from kubectl_kvcache.engine.predict import predict
    doc = {"kv_connector": "PyNcclConnector", "kv_role": "kv_producer", "kv_rank": 0}
    p = predict({"name": "x", "image": "vllm/vllm-openai:v0.34.0",
                 "command": ["vllm", "serve", "m", "--kv-transfer-config", _json.dumps(doc)]})
    assert p.outcome == "rejected"
    assert "opaque" not in p.reason and "'kv_rank' is no field of the config class" in p.reason
