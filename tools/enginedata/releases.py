"""The engine releases the conformance tier builds real parsers for, and engine data is read from.

Listed in issue 13, plus every release the engine data names as a boundary (the first release
with a value, an option or a parser feature) and the release before each boundary, so a boundary
is pinned between two real parsers. Adding a release: add it here, run `scripts/engine-data
--write`, review the diff of kubectl_kvcache/engine/parsers.json.
"""

# Every final release on PyPI (patch and post releases included; none is yanked as of 2026-12-03)
# from the first with the flag; `scripts/engine-data --missing` lists what PyPI has that this lacks.
RELEASES = {
    "vllm": [
        "0.3.3", "0.4.0", "0.4.0.post1", "0.4.1", "0.4.2", "0.4.3", "0.5.0", "0.5.0.post1", "0.5.1", "0.5.2",
        "0.5.3", "0.5.3.post1", "0.5.4", "0.5.5", "0.6.0", "0.6.1", "0.6.1.post1", "0.6.1.post2", "0.6.2",
        "0.6.3", "0.6.3.post1", "0.6.4", "0.6.4.post1", "0.6.5", "0.6.6", "0.6.6.post1", "0.7.0", "0.7.1",
        "0.7.2", "0.7.3", "0.8.0", "0.8.1", "0.8.2", "0.8.3", "0.8.4", "0.8.5", "0.8.5.post1", "0.9.0",
        "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2",
        "0.12.0", "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0",
        "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0",
        "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0",
        "0.32.0", "0.33.0", "0.34.0",
    ],
    "sglang": [
        "0.2.14", "0.2.14.post1", "0.2.14.post2", "0.2.15", "0.3.0", "0.3.1", "0.3.1.post1", "0.3.1.post2",
        "0.3.1.post3", "0.3.2", "0.3.3", "0.3.3.post1", "0.3.4", "0.3.4.post1", "0.3.4.post2", "0.3.5",
        "0.3.5.post1", "0.3.5.post2", "0.3.6", "0.3.6.post1", "0.3.6.post2", "0.3.6.post3", "0.4.0",
        "0.4.0.post1", "0.4.0.post2", "0.4.1", "0.4.1.post1", "0.4.1.post2", "0.4.1.post3", "0.4.1.post4",
        "0.4.1.post5", "0.4.1.post6", "0.4.1.post7", "0.4.2", "0.4.2.post1", "0.4.2.post2", "0.4.2.post3",
        "0.4.2.post4", "0.4.3", "0.4.3.post1", "0.4.3.post2", "0.4.3.post3", "0.4.3.post4", "0.4.4",
        "0.4.4.post1", "0.4.4.post2", "0.4.4.post3", "0.4.4.post4", "0.4.5", "0.4.5.post1", "0.4.5.post2",
        "0.4.5.post3", "0.4.6", "0.4.6.post1", "0.4.6.post2", "0.4.6.post3", "0.4.6.post4", "0.4.6.post5",
        "0.4.7", "0.4.7.post1", "0.4.8", "0.4.8.post1", "0.4.9", "0.4.9.post1", "0.4.9.post2", "0.4.9.post3",
        "0.4.9.post4", "0.4.9.post5", "0.4.9.post6", "0.4.10", "0.4.10.post1", "0.4.10.post2", "0.5.1",
        "0.5.1.post1", "0.5.1.post2", "0.5.1.post3", "0.5.2", "0.5.3", "0.5.3.post1", "0.5.3.post2",
        "0.5.3.post3", "0.5.4", "0.5.4.post1", "0.5.4.post2", "0.5.4.post3", "0.5.5", "0.5.5.post1",
        "0.5.5.post2", "0.5.5.post3", "0.5.6", "0.5.6.post1", "0.5.6.post2", "0.5.7", "0.5.8", "0.5.8.post1",
        "0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1",
        "0.5.14", "0.5.15", "0.5.15.post1", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21",
        "0.5.22", "0.5.23",
    ],
}

# The releases issue 13 lists by name (the tier fails if one of them cannot be built).
LISTED = {
    "vllm": ["0.10.1", "0.10.2", "0.11.0", "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.29.0", "0.32.0",
             "0.33.0"],
    "sglang": ["0.4.8", "0.4.9", "0.5.3", "0.5.4", "0.5.12", "0.5.13", "0.5.16", "0.5.18", "0.5.21",
               "0.5.23"],
}


# Releases between two of the old samples (issue 38), judged "as the earlier one" before every
# release was in the data: the fuzz tier replays each with its own real parser on every run.
BETWEEN = {
    "vllm": ["0.13.0", "0.14.1", "0.15.1", "0.22.1", "0.26.0", "0.34.0"],
    "sglang": ["0.4.3.post2", "0.5.1.post3", "0.5.6.post2", "0.5.9", "0.5.14", "0.5.22"],
}

# The releases the engine data sampled before it held every one (issue 13's list and each
# boundary): the conformance tier replays these on every run.
SAMPLED = {
    "vllm": ["0.3.3", "0.4.0", "0.4.1", "0.4.2", "0.4.3", "0.5.0", "0.5.1", "0.5.3", "0.5.5", "0.6.0",
             "0.6.5", "0.6.6", "0.7.0", "0.8.5", "0.9.0", "0.10.0", "0.10.1", "0.10.2", "0.11.0",
             "0.11.1", "0.11.2", "0.16.0", "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.24.0", "0.25.0",
             "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"],
    "sglang": ["0.2.14", "0.4.1", "0.4.2", "0.4.7", "0.4.8", "0.4.9", "0.5.2", "0.5.3", "0.5.4",
               "0.5.4.post2", "0.5.4.post3", "0.5.5", "0.5.12", "0.5.13", "0.5.15", "0.5.16", "0.5.18",
               "0.5.20", "0.5.21", "0.5.23"],
}

ROTATING = 6   # further releases per engine the tier replays, a different slice every day


def all_releases():
    return [(engine, v) for engine in ("vllm", "sglang") for v in RELEASES[engine]]


def tier_releases(day=None):
    """{engine: [release]} the conformance tier replays this run: LISTED, BETWEEN, the first and
    the last release, and ROTATING more per engine chosen by the UTC day (KVCACHE_TIER_DAY
    overrides; KVCACHE_TIER_ALL=1: all), so every release is replayed within len(rest)/ROTATING
    days. (SAMPLED stays out of the fixed set: 75 releases a run took the cold CI past 45 minutes.) That every release's shipped
    data equals its parser is proved each run by tests/conformance/test_engine_data.py's check
    of the whole parsers.py against the saved descriptions, regenerated from the wheels."""
    import os
    import time
    if os.environ.get("KVCACHE_TIER_ALL") == "1":
        return {e: list(vs) for e, vs in RELEASES.items()}
    if day is None:
        day = int(os.environ.get("KVCACHE_TIER_DAY") or time.time() // 86400)
    out = {}
    for engine, versions in RELEASES.items():
        fixed = set(LISTED[engine]) | set(BETWEEN[engine]) | {versions[0], versions[-1]}
        rest = [v for v in versions if v not in fixed]
        start = (day * ROTATING) % len(rest) if rest else 0
        chosen = set((rest + rest)[start:start + min(ROTATING, len(rest))])
        out[engine] = [v for v in versions if v in fixed or v in chosen]
    return out


TIER = tier_releases()
