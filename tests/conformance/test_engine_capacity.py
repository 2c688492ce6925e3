"""The capacity reader (engine/capacity.py) against the real releases.

1. engine/capacity.json (each release's capacity lines and vllm:cache_config_info's capacity
   labels) equals what the released code holds (tools/enginedata/capacity_data.py, run here).
2. Every capacity logging call of every release in this run's slice, its message formatted by the
   call's own format string and format specs (the %-format with its arguments, the f-string and
   the f"{x:,}" a Name argument was assigned, run here with Python's own formatting on chosen
   values), behind the logger's prefix the release writes (vLLM's _FORMAT: engine_lines.vllm_log;
   SGLang's configure_logger "[%(asctime)s TP0] "): read back as exactly those values.
3. The same lines with a figure cut off the end, and behind a config line's model path, not read.
"""

import ast
import copy
import os
import sys

import pytest

from kubectl_kvcache.engine import capacity, knowledge

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cluster"))

import capacity_data  # noqa: E402  (tools/enginedata: conftest.py puts it on the path)
import engine_lines  # noqa: E402
import wheels  # noqa: E402
from releases import TIER as RELEASES  # noqa: E402

DATA = knowledge.load("capacity")
VALUES = {"tokens": 652144, "blocks": 40759, "max_len": 32768, "concurrency": 19.9, "cpu_blocks": 2048}
OTHER = {"d": 8192, "f2": 12.34}


def test_the_shipped_capacity_formats_per_release_equal_the_wheels():
    read = capacity_data.generate(RELEASES)
    for engine, versions in read["formats"].items():
        for version, ids in versions.items():
            assert DATA["formats"][engine].get(version) == ids, \
                f"{engine} {version}: capacity.json differs from the wheel: run scripts/engine-data --capacity --write"
            assert all(DATA["templates"][i] == read["templates"][i] for i in ids)
    for version, labels in read["labels"].items():
        assert DATA["labels"][version] == labels
    from releases import RELEASES as EVERY
    assert {e: sorted(v) for e, v in DATA["formats"].items()} == {e: sorted(v) for e, v in EVERY.items()}


def _joined(node, values):
    """An f-string run by Python with each of its fields' expressions replaced by a chosen value
    (its conversion and format spec kept: the code's own formatting)."""
    node = copy.deepcopy(node)
    names = {}
    for n, part in enumerate(p for p in node.values if isinstance(p, ast.FormattedValue)):
        names[f"_f{n}"] = values[n]
        part.value = ast.Name(f"_f{n}", ast.Load())
    return eval(compile(ast.fix_missing_locations(ast.Expression(node)), "<message>", "eval"), names)  # noqa: S307


def _value(field, leading):
    if leading:
        return "GPU"            # vllm/v1/core/kv_cache_utils.py _kv_cache_device_name on CUDA
    if field["name"] in VALUES:
        return VALUES[field["name"]]
    return OTHER.get(field["type"], "available_gpu_mem" if "available" in field["arg"] else 4096)


def _arg(expr, func, value):
    """A %-format argument as the code computes it from `value`: a Name assigned an f-string in
    the same function (num_tokens_str = f"{num_tokens:,}") or an f-string argument, run."""
    if isinstance(expr, ast.Name) and func is not None:
        assigned = capacity_data._assigned(func, expr.id)
        if isinstance(assigned, ast.JoinedStr):
            expr = assigned
    if isinstance(expr, ast.JoinedStr):
        return _joined(expr, [value] * sum(isinstance(p, ast.FormattedValue) for p in expr.values))
    return value


def message(call, func, template):
    """The message the logging call writes with the chosen values."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
    msg, rest = (call.args[1], call.args[2:]) if name in capacity_data.RANK0 else (call.args[0], call.args[1:])
    fields = template[1::2]
    values = [_value(f, i == 0 and template[0] == "") for i, f in enumerate(fields)]
    if isinstance(msg, ast.JoinedStr):
        return _joined(msg, values), values
    fmt = capacity_data._message(msg)[0]
    if not rest:
        return fmt, values
    return fmt % tuple(_arg(e, func, v) for e, v in zip(rest, values, strict=True)), values


def _calls(engine, version):
    root = wheels.ensure(engine, version)
    for source in capacity_data._sources(os.path.join(root, engine)):
        try:
            yield from capacity_data.calls_in(engine, source)
        except SyntaxError:
            continue


def _logged(engine, version, text):
    if engine == "sglang":
        return f"[2026-01-01 00:00:00 TP0] {text}\n"
    try:
        return engine_lines.vllm_log(version, "INFO", text, fileinfo="kv_cache_utils.py", lineno=1087)
    except (OSError, StopIteration, AssertionError, KeyError):
        return f"INFO 01-01 00:00:00 kv_cache_utils.py:1087] {text}\n"    # vllm 0.3-0.4's _FORMAT


CASES = [(e, v) for e, versions in RELEASES.items() for v in versions]


@pytest.mark.parametrize("engine,version", CASES)
def test_every_capacity_line_the_release_writes_reads_back(engine, version):
    seen = set()
    for kind, template, call, func in _calls(engine, version):
        text, values = message(call, func, template)
        line = _logged(engine, version, text)
        got = capacity.reports(engine, line, "log", version)
        assert len(got) == 1 and not got[0].why, (kind, line, got)
        report = got[0]
        for field, value in zip(template[1::2], values, strict=True):
            if field["name"] in ("tokens", "blocks", "max_len", "concurrency"):
                assert getattr(report, field["name"]) == value, (field, line)
        assert report.line.endswith(text.rstrip()[-40:])
        if template[-1].strip():
            # cut inside its last figure (a line that ends in a literal): not read, never a
            # smaller number. (One that ends in its figure is cut only at the read limit, which
            # load/engine_words says: judge/observed drops that partial line.)
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            cut = capacity.reports(engine, _logged(engine, version, text[:digits[-1]]), "log", version)
            assert [bool(r.why) for r in cut] == [True], (text[:digits[-1]], cut)
        # the report's text inside another line's quoted value (a model path), that line going on
        forged = _logged(engine, version, f"Initializing engine with config: model='/models/] {text}', seed=0")
        assert all(r.why for r in capacity.reports(engine, forged, "log", version)), forged
        seen.add(capacity_data.template_id(kind, template))
    assert seen == set(DATA["formats"][engine][version])


def _v1_metrics(version):
    root = wheels.cached("vllm", version)
    path = os.path.join(root or "", "vllm/v1/metrics/loggers.py")
    return not root or (os.path.exists(path) and os.path.exists(os.path.join(root, "vllm/config/cache.py"))
                        and "vllm:cache_config_info" in open(path, encoding="utf-8").read())


@pytest.mark.parametrize("version", [v for v in RELEASES["vllm"] if _v1_metrics(v)])
def test_metrics_labels_as_the_release_writes_them(version):
    """vllm:cache_config_info with the release's CacheConfig fields as labels (engine_lines'
    vllm_metrics: str() of each default, as metrics_info() writes them; V1's loggers.py, the
    releases that have it), the capacity set as the running engine sets it."""
    page = engine_lines.vllm_metrics(version, "fp8")
    labels = capacity.labels(version)
    page = page.replace('num_gpu_blocks="None"', 'num_gpu_blocks="18759"').replace(
        'block_size="None"', 'block_size="16"').replace(
        'kv_cache_size_tokens="None"', 'kv_cache_size_tokens="300220"')
    got = capacity.observe("vllm", page, "metrics", version)
    assert got is not None and got.blocks == 18759 and got.block_size is not None
    if "kv_cache_size_tokens" in labels:
        assert (got.tokens, got.basis) == (300220, capacity.TOKENS)
    else:
        assert (got.tokens, got.basis) == (18759 * got.block_size, capacity.BLOCKS)
