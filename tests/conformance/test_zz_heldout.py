"""The held-out real commands (issue 38 item 3): launch commands from repositories the tuned
corpus (realcmds/corpus.yaml) does not use, taken as harvested (realcmds/heldout.py) and never
tuned on. Named to run last in the tier; its rate is reported apart from the tuned corpus's, in
the terminal summary ("held-out launch commands"). A definite answer the real parser contradicts
fails, as on the tuned corpus; the decided rate is reported, not held to a floor (a floor met by
tuning on these rows would make them tuned rows).
"""

import collections
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "realcmds"))

import build  # noqa: E402
import isolate  # noqa: E402
import test_realcmds as tuned  # noqa: E402
import tierstats as tier  # noqa: E402

# a few releases per engine, old to newest (each one's wheel is in the cache: every release is)
RELEASES = {"vllm": ["0.11.0", "0.14.1", "0.22.1", "0.33.0", "0.34.0"],
            "sglang": ["0.4.9", "0.5.9", "0.5.18", "0.5.23"]}
ENTRIES = build.load(build.HELDOUT)


@pytest.fixture(autouse=True)
def _sandbox():
    """Held-out lines run only in the sandbox too (realcmds/isolate.py)."""
    isolate.require()


@pytest.mark.parametrize("engine,version", [pytest.param(e, v, id=f"{e}-{v}") for e in RELEASES for v in RELEASES[e]])
def test_heldout_release(oracles, engine, version):
    res = tuned.run_release(oracles, engine, version, ENTRIES, tier.HELDOUT)
    cases = res.rows["decidable: cases"] + res.rows["shell reading what the Pod does not set: cases"]
    assert cases > 0, f"{engine} {version}: no held-out row was judged"
    wrong = [f"{c.entry_id} [{c.kind}, {c.variant}]: plugin {mine} ({reason}); real {real}\n"
             f"    argv {tuned.LAUNCHER[c.entry] + list(c.argv)}" for c, mine, real, reason in res.wrong]
    assert not wrong, f"{engine} {version}: {len(wrong)} wrong definite answers on held-out rows:\n" + \
        "\n".join(wrong[:10])


def test_heldout_corpus_is_from_repositories_the_tuned_corpus_does_not_use():
    tuned_repos = {e["source"]["repo"] for e in tuned.corpus()}
    held = {e["source"]["repo"] for e in ENTRIES}
    assert len(ENTRIES) >= 100 and len(held) >= 4 and not held & tuned_repos
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)


def summary_lines():
    releases = tier.HELDOUT
    if not releases:
        return []
    total = collections.Counter()
    causes = collections.Counter()
    lines = [f"held-out commands: {len(ENTRIES)} from {len({e['source']['repo'] for e in ENTRIES})} repositories "
             f"not in the tuned corpus; {len(releases)} releases (reported apart, never tuned on)"]
    for name, res in sorted(releases.items()):
        total.update(res.rows)
        causes.update(res.unknown)
        lines.append(f"  {name:<18} decided {tuned.decided_rate(res):6.1%} of {res.rows['decidable: cases']:>5}  "
                     f"wrong {res.rows['decidable: WRONG']}")
    cases = total["decidable: cases"]
    lines.append(f"  all: {cases} decidable rows, {total['decidable: UNKNOWN']} UNKNOWN "
                 f"({(cases - total['decidable: UNKNOWN']) / max(cases, 1):.1%} decided), "
                 f"{total['decidable: WRONG']} wrong")
    for reason, count in causes.most_common(8):
        lines.append(f"  UNKNOWN x{count}: {reason}")
    return lines
