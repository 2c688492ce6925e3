"""The conformance tier's counts, shared by its tests and its conftest (printed at the end)."""

import collections

STATS = collections.Counter()
RELEASES_SEEN = set()
UNKNOWN_REASONS = collections.Counter()
REALCMDS = {}   # test_realcmds: "releases" -> {"engine version": its Result}
HELDOUT = {}    # test_zz_heldout: {"engine version": its Result} (the held-out corpus, reported apart)
CONNECTORS = {}  # test_connectors: {"engine version": its Result} (realcmds/connectors.yaml)
CONNECTORS_HELDOUT = {}  # test_zz_connectors_heldout: the same for realcmds/connectors_heldout.yaml
