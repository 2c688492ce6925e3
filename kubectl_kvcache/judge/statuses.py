"""verify's statuses and what each means: the one home of the words the judge gives a replica
(judge/verify.py re-exports them), light so that `verify --help` and --fail-on read them without
loading the judge; and the word --watch shows in STATUS for a deleted Pod's last row."""

OK, MISMATCH, MISSING, REJECTED, UNKNOWN = "OK", "MISMATCH", "MISSING", "REJECTED", "UNKNOWN"
NO_POD = "NO-POD"
WILL_REJECT = "WILL-REJECT"     # not rolled yet, and the engine rejects the Binding's dtype it will be given
STATUSES = (OK, MISMATCH, MISSING, WILL_REJECT, REJECTED, UNKNOWN, NO_POD)
MEANINGS = {      # one line each (docs/verify.md "Status" has them in full); reports name their rules with them
    OK: "the engine will run with the Binding's dtype",
    MISMATCH: "the engine will run with another value than the Binding's dtype",
    MISSING: "no --kv-cache-dtype at all while the Setting is on: the replica has not rolled yet",
    WILL_REJECT: "not rolled yet, and the engine release rejects the Binding's dtype it will be given",
    REJECTED: "the engine exits on its arguments",
    UNKNOWN: "what the engine runs with cannot be decided from the objects",
    NO_POD: "a replica that should exist has no Pod",
}

# --watch: a deleted Pod's last row is printed once more with this STATUS (kubectl get -w prints
# a deleted object once more); never a judgement, so never in STATUSES, --fail-on or a report
DELETED = "DELETED"
DELETED_MEANING = "with --watch, the last row of a Pod that was deleted"
