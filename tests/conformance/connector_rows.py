"""What test_connectors.py and test_zz_connectors_heldout.py share (issue 52 item 3): the KV-connector
launch commands of realcmds/connectors*.yaml through the real parser of a few releases, the plugin's
answers held to it as test_realcmds.py holds the tuned corpus's (no definite answer the release
contradicts), the decided rate reported per part."""

import collections

import test_realcmds as tuned

# a few releases per engine, old to newest: the KV connector configs people write are vLLM V1's
# (0.9 on) and SGLang's disaggregation and HiCache options (each release's wheel is in the cache)
RELEASES = {"vllm": ["0.9.2", "0.11.0", "0.14.1", "0.22.1", "0.33.0", "0.34.0"],
            "sglang": ["0.4.9", "0.5.9", "0.5.23"]}
PARAMS = [(e, v) for e in RELEASES for v in RELEASES[e]]


def check_release(oracles, engine, version, entries, stats, name):
    res = tuned.run_release(oracles, engine, version, entries, stats, name)
    wrong = [f"{c.entry_id} [{c.kind}, {c.variant}]: plugin {mine} ({reason}); real {real}\n"
             f"    argv {tuned.LAUNCHER[c.entry] + list(c.argv)}" for c, mine, real, reason in res.wrong]
    assert not wrong, f"{engine} {version}: {len(wrong)} wrong definite answers on {name} rows:\n" + \
        "\n".join(wrong[:10])
    return res


def summary(title, entries, releases):
    if not releases:
        return []
    total = collections.Counter()
    causes = collections.Counter()
    lines = [f"{title}: {len(entries)} commands from {len({e['source']['repo'] for e in entries})} repositories; "
             f"{len(releases)} releases"]
    for name, res in sorted(releases.items()):
        total.update(res.rows)
        causes.update(res.unknown)
        lines.append(f"  {name:<18} decided {tuned.decided_rate(res):6.1%} of {res.rows['decidable: cases']:>5}  "
                     f"wrong {res.rows['decidable: WRONG']}")
    cases = total["decidable: cases"]
    lines.append(f"  all: {cases} decidable rows, {total['decidable: UNKNOWN']} UNKNOWN "
                 f"({(cases - total['decidable: UNKNOWN']) / max(cases, 1):.1%} decided), "
                 f"{total['decidable: WRONG'] + total['shell reading what the Pod does not set: WRONG']} wrong; "
                 f"shell rows reading unset variables {total['shell reading what the Pod does not set: cases']}")
    for reason, count in causes.most_common(8):
        lines.append(f"  UNKNOWN x{count}: {reason}")
    return lines
