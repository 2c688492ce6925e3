"""The one gate before the Setting is turned on: `setting on` and recover's last step both ask it.

Pure: check's report (judged with the Setting as it is before, off) in, the answer out: which
errors turning the Setting on causes now, each with its fix (a rejected Binding's fix is its
`kubectl kvcache recover` command), and which errors exist with the Setting off too (a
deployment naming a missing Binding, a claimed domain, a take-over role's own command): turning
it on does not change those, so they do not hold it back. Which code is which is the registry's
(checks.CODES, `with_setting_on`).
"""

from __future__ import annotations

from kubectl_kvcache.judge.checks import ERROR
from kubectl_kvcache.judge.checks.findings import caused_by_setting_on
from kubectl_kvcache.record import Record


_OWN = ("setting-in-flight",)      # the Setting's own state: what turning it on changes, not a finding about it


class Gate(Record):
    __slots__ = ("caused", "unchanged", "summary")
    __hash__ = None

    def __init__(self, caused: list, unchanged: list, summary: dict):
        self.caused = caused            # error findings the Setting on causes
        self.unchanged = unchanged      # error findings that exist with it off too
        self.summary = summary          # the report's counts per severity

    @property
    def passes(self) -> bool:
        return not self.caused

    def accepts(self, force: bool = False) -> bool:
        """Whether `setting on` (and recover's last step) goes ahead: the gate passes, or --force."""
        return self.passes or force


FORCE = "--force"


def on_flags(verdict: Gate | None) -> tuple[str, ...]:
    """The flags `setting on` needs to be accepted in the state this gate was judged in, decided by
    the rule that refuses it (Gate.accepts): none when it passes; --force when it refuses, or when
    check's judgement could not run (`verdict` None: `setting on` refuses to go ahead without it
    unless --force). A hint built from this is a command that will be accepted as it is printed."""
    return () if verdict is not None and verdict.accepts(force=False) else (FORCE,)


def gate(report) -> Gate:
    errors = [f for f in report.findings if f.severity == ERROR and f.code not in _OWN]
    refused = caused_by_setting_on(report.findings)
    return Gate(refused, [f for f in errors if f not in refused], report.summary())
