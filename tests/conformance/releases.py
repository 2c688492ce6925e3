"""The engine releases the conformance tier builds real parsers for, and engine data is read from.

Listed in issue 13, plus every release the engine data names as a boundary (the first release
with a value, an option or a parser feature) and the release before each boundary, so a boundary
is pinned between two real parsers. Adding a release: add it here, run `scripts/engine-data
--write`, review the diff of kubectl_kvcache/engine/parsers.json.
"""

RELEASES = {
    "vllm": [
        # before `vllm serve` (only python -m vllm.entrypoints.openai.api_server)
        "0.3.3", "0.4.0", "0.4.1", "0.4.2", "0.4.3", "0.5.0", "0.5.1",
        # `vllm serve` from 0.5.3
        "0.5.3", "0.5.5", "0.6.0", "0.6.5", "0.6.6", "0.7.0", "0.8.5", "0.9.0",
        "0.10.0", "0.10.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.16.0", "0.17.0", "0.18.0",
        "0.19.0", "0.20.0", "0.24.0", "0.25.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0",
        "0.32.0", "0.33.0",
    ],
    "sglang": [
        "0.2.14", "0.4.1", "0.4.2", "0.4.7", "0.4.8", "0.4.9", "0.5.2", "0.5.3",
        "0.5.4", "0.5.4.post2", "0.5.4.post3", "0.5.5", "0.5.12", "0.5.13", "0.5.15", "0.5.16",
        "0.5.18", "0.5.20", "0.5.21", "0.5.23",
    ],
}

# The releases issue 13 lists by name (the tier fails if one of them cannot be built).
LISTED = {
    "vllm": ["0.10.1", "0.10.2", "0.11.0", "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.29.0", "0.32.0",
             "0.33.0"],
    "sglang": ["0.4.8", "0.4.9", "0.5.3", "0.5.4", "0.5.12", "0.5.13", "0.5.16", "0.5.18", "0.5.21",
               "0.5.23"],
}


def all_releases():
    return [(engine, v) for engine in ("vllm", "sglang") for v in RELEASES[engine]]
