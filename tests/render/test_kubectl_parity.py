"""The plugin's kubectl output options against the REAL kubectl of the pinned release, on the
plugin's own -o json output (tests/kubectl_parity.py says how). Needs the pinned kubectl
(the pinned_kubectl fixture: scripts/test-binaries; under CI a failure, never a skip). The
held-out seed runs last (test_zz_kubectl_parity_heldout.py), its rate reported apart."""

import pytest

import kubectl_parity

SEED, COUNT = 20261205, 60        # tuned on: the differences this seed found were fixed


@pytest.mark.parametrize("command", kubectl_parity.COMMANDS)
def test_same_bytes_as_kubectl(pinned_kubectl, tmp_path, command):
    doc, verdict = kubectl_parity.document(command)
    kubectl = kubectl_parity.Kubectl(pinned_kubectl, doc, str(tmp_path))
    try:
        failures = [f"{options!r}:\n{diff}" for options in kubectl_parity.cases(doc, SEED, COUNT)
                    if (diff := kubectl_parity.compare(kubectl, command, verdict, options)) is not None]
    finally:
        kubectl.close()
    assert not failures, f"{len(failures)} of {COUNT} differ from kubectl:\n" + "\n---\n".join(failures[:5])


def test_the_tier_can_fail(pinned_kubectl, tmp_path):
    """A document other than the plugin's (its rows reversed) is reported as a difference."""
    doc, verdict = kubectl_parity.document("verify")
    other = dict(doc, items=list(reversed(doc["items"])))
    kubectl = kubectl_parity.Kubectl(pinned_kubectl, other, str(tmp_path))
    try:
        assert kubectl_parity.compare(kubectl, "verify", verdict, ["-o", "name"]) is not None
        assert kubectl_parity.compare(kubectl, "verify", verdict, ["-o", "jsonpath={.items[0].pod}"]) is not None
    finally:
        kubectl.close()


@pytest.mark.parametrize("command", kubectl_parity.COMMANDS)
def test_no_rows_as_kubectl(pinned_kubectl, tmp_path, command):
    """A scope with no rows: kubectl's List of nothing (`[]`, a lone header, no names)."""
    scope = ("-n", "nowhere", "-f", kubectl_parity.EXAMPLE)
    doc, verdict = kubectl_parity.document(command, scope)
    kubectl = kubectl_parity.Kubectl(pinned_kubectl, doc, str(tmp_path))
    try:
        for options in (["-o", "jsonpath={.items}"], ["-o", "custom-columns=A:.x,B:.metadata.name"], ["-o", "name"],
                        ["-o", "jsonpath={.kind} {.items[0].x}"], ["-o", "name", "--sort-by", ".x"]):
            assert kubectl_parity.compare(kubectl, command, verdict, options, scope) is None, options
    finally:
        kubectl.close()


def test_template_files_as_kubectl(pinned_kubectl, tmp_path):
    """The -file forms: a directory, an empty file, a header without specs, a count mismatch, a
    missing file, CRLF lines."""
    doc, verdict = kubectl_parity.document("roles")
    files = {"empty": "", "one": "A B\n", "bad": "A B\n.x\n", "crlf": "N K\r\n.metadata.name .kind\r\n",
             "template": '{range .items[*]}{.metadata.name}{"\\n"}{end}', "blank": "\n\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    kubectl = kubectl_parity.Kubectl(pinned_kubectl, doc, str(tmp_path))
    try:
        for fmt in ("jsonpath-file", "custom-columns-file"):
            for target in [str(tmp_path), str(tmp_path / "nonexistent")] + [str(tmp_path / n) for n in files]:
                options = ["-o", f"{fmt}={target}"]
                assert kubectl_parity.compare(kubectl, "roles", verdict, options) is None, options
    finally:
        kubectl.close()
