"""The one masking of cluster text (kubectl_kvcache/masking.py): every secret form of the corpus
(tests/secrets_corpus.py) masked whole, the word that names it kept, a fixed mark whatever the
value's length, the KV-cache dtype words and the engines' own option names left as written.
The CLI's formats and --wait's stderr are held to it in tests/render/test_masking_formats.py."""

import json
import os
import re

import pytest

import secrets_corpus as corpus
from kubectl_kvcache import engine, masking
from kubectl_kvcache.engine import words

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def leaked(entry, text):
    return [s for s in entry.secrets if s in text]


@pytest.mark.parametrize("entry", corpus.TUNED, ids=lambda e: e.id)
def test_each_secret_form_is_masked_and_the_line_still_reads(entry):
    shown = masking.mask(entry.line)
    assert not leaked(entry, shown), shown
    assert masking.MARK in shown
    for word in entry.keep:
        assert word in shown, (word, shown)


@pytest.mark.parametrize("entry", corpus.TUNED, ids=lambda e: e.id)
def test_redact_masks_what_the_engine_line_shows(entry):
    """engine/words.redact (every Observed and ExitCause line): the same masking, and the 300
    characters cut after it, so no token is cut into a prefix the masking no longer knows."""
    for line in (entry.line, "x" * (words.MAX_LINE - 40) + " " + entry.line):
        shown = words.redact(line)
        assert not any(s in shown or s[:20] in shown for s in entry.secrets if len(s) >= 20), shown
        assert not leaked(entry, shown), shown


def test_heldout_rate():
    """Held out: written before the masker first ran on it, never tuned on. The rate is reported
    (docs/tests.md); the floor is its first measured rate, so a change that masks less fails."""
    missed = [e.id for e in corpus.HELDOUT if leaked(e, masking.mask(e.line))]
    rate = 1 - len(missed) / len(corpus.HELDOUT)
    print(f"\nmasking, held-out forms: {len(corpus.HELDOUT) - len(missed)}/{len(corpus.HELDOUT)} masked "
          f"({rate:.0%}); missed: {missed}")
    assert rate >= HELDOUT_FLOOR, missed


HELDOUT_FLOOR = 0.9     # first run (issue 47): 18/20; the two misses are listed in docs/tests.md


def test_the_mark_does_not_tell_the_length():
    short, long = masking.mask("password=ab"), masking.mask("password=" + "a" * 200)
    assert short == long == "password=" + masking.MARK
    assert masking.mask(f"x {corpus.token('hf', 5)} y") == masking.mask(f"x {corpus.token('hf', 5)}ABCDEF y")


def _dtypes():
    return sorted({d for e in engine.ENGINES for v in engine.all_releases(e) for d in engine.profile(e, v).accepted})


def test_kv_cache_dtype_words_are_never_masked():
    """Every dtype spelling any release accepts, in each shape the engines write it (VllmConfig's
    `kv_cache_dtype=`, the args dict, ServerArgs' repr, the metrics label, SGLang's torch dtype)."""
    dtypes = _dtypes()
    assert {"auto", "fp8", "fp8_e5m2", "fp8_e4m3"} <= set(dtypes)
    for d in dtypes:
        for line in (f"kv_cache_dtype={d}, device_config=cuda", f"{{'kv_cache_dtype': '{d}'}}",
                     f"ServerArgs(kv_cache_dtype='{d}', api_key=None)", f'cache_dtype="{d}",',
                     f"Using KV cache dtype: torch.{d}", f"--kv-cache-dtype {d}", f"--kv-cache-dtype={d}"):
            assert masking.mask(line) == line, line


def test_which_engine_options_name_a_secret():
    """The engines' own option names (parsers.json, generated from every release's parser): the
    value after each of these is masked, and no other (`--long-prefill-token-threshold 0` reads)."""
    with open(os.path.join(ROOT, "kubectl_kvcache", "engine", "parsers.json"), encoding="utf-8") as f:
        options = set(re.findall(r'"(--[a-z0-9][a-z0-9-]*)"', json.dumps(json.load(f)["data"])))
    assert len(options) > 500
    secret = sorted(o for o in options if masking.secret_key(o[2:]))
    assert {"--api-key", "--hf-token", "--admin-api-key", "--ssl-keyfile-password"} <= set(secret)
    assert not {"--kv-cache-dtype", "--max-num-batched-tokens", "--tokenizer", "--skip-tokenizer-init",
                "--return-tokens-as-token-ids", "--long-prefill-token-threshold", "--ssl-keyfile",
                "--enable-forward-pass-metrics"} & set(secret)
    assert len(secret) <= 8, secret


@pytest.mark.parametrize("line", [
    "ERROR 12-05 10:11:12 [auth.py:123] failed",                   # a file and line, not `auth: 123`
    "http://host:8000/path?email=a@b.com",                          # a port, then an '@' in the query
    "--disable-auth --port 8000",                                   # a flag without a value
    "ServerArgs(api_key=None, hf_token=None)",                      # nothing to hide
    "(EngineCore_DP0 pid=231) ValueError: tokenizer_mode='auto' max_num_batched_tokens=8192",
])
def test_what_is_no_secret_stays(line):
    assert masking.mask(line) == line


def test_argv_as_shown():
    """A Pod's own argv (describe's Argv rows): `--api-key VALUE` as two elements, `--x=VALUE`,
    a shell line's `HF_TOKEN=...`; the dtype and everything else as written."""
    tok = corpus.token("hf", 7)
    argv = ["vllm", "serve", "m", "--api-key", "abc123", "--hf-token=" + tok, "--kv-cache-dtype", "fp8", 8000,
            "sh", "-c", f"HF_TOKEN={tok} exec vllm serve m"]
    shown = masking.mask_argv(argv)
    assert shown[:4] == ["vllm", "serve", "m", "--api-key"] and shown[4] == masking.MARK
    assert shown[6:9] == ["--kv-cache-dtype", "fp8", 8000]
    assert "abc123" not in str(shown) and tok not in str(shown)


def test_an_excerpt_is_masked_as_the_whole_line():
    """masking.mask_range: a cut inside a quoted value (its key before the cut) or inside a
    token (its prefix before the cut) still masks the piece shown."""
    tok = corpus.token("ghp", 8)
    line = "x" * 100 + ' password="alpha beta gamma delta" ' + "y" * 50 + " " + tok + " tail"
    cut = line.index("gamma")
    shown = masking.mask_range(line, cut, len(line))
    assert "gamma" not in shown and "delta" not in shown and shown.startswith(masking.MARK)
    mid = line.index(tok) + 10
    assert masking.mask_range(line, 0, mid).endswith(masking.MARK) and tok[:10] not in masking.mask_range(line, 0, mid)
    assert masking.mask_range(line, mid, len(line)) == masking.MARK + " tail"
    assert masking.mask_range(line, 0, len(line)) == masking.mask(line)
