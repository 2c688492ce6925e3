"""Held out: the same generator on a seed never tuned on, run last in tests/render; a difference
fails, and the rate is printed apart (`kubectl printers, held out`)."""

import kubectl_parity

SEED, COUNT = 48_0009, 40


def test_held_out_seed(pinned_kubectl, tmp_path, capsys):
    total, failures = kubectl_parity.run(pinned_kubectl, SEED, COUNT, str(tmp_path))
    with capsys.disabled():
        print(f"\nkubectl printers, held out: {total - len(failures)}/{total} cases byte-equal to kubectl")
    assert not failures, "\n---\n".join(failures[:5])
