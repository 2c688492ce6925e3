"""The tier's guard against an oracle interpreter without the `conformance` extra (deps.py, conftest.py):
read from the installed package's own metadata (setup.cfg), not a copy of the list."""

import importlib.metadata

import deps


def test_nothing_missing_here():
    assert deps.missing_conformance_deps() == []


def test_a_missing_distribution_is_named(monkeypatch):
    real = importlib.metadata.version

    def version(name):
        if name == "msgspec":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert deps.missing_conformance_deps() == ["msgspec"]
