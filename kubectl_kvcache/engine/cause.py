"""What would decide an UNKNOWN: a short code and the thing that decides it.

The text reason says why in a sentence; the cause is the same answer as data, so `verify -o json`
carries it and `check` can count a fleet's UNKNOWN replicas by what would fix them (the variable
to set in the Pod spec, the option to replay, the file to read). One home for the codes.
"""

from __future__ import annotations

import re

from kubectl_kvcache.record import Record

# What can leave an answer UNKNOWN: a cause's code -> what it means (the deciding thing is the
# cause's `subject`). Not finding codes (judge/checks/findings.CODES): a finding may carry a cause.
CAUSES = {
    "variable": "a variable whose value the Pod spec does not hold (Secret, ConfigMap, envFrom, image)",
    "element": "an argv element whose value the Pod spec does not hold",
    "shell": "a shell construct this plugin does not follow",
    "program": "a program or entry point this plugin does not recognise",
    "image": "the image's ENTRYPOINT/CMD, which the Pod spec does not hold",
    "config-file": "a --config file, read at start-up from the image",
    "file": "a file an option names, read at start-up from the image",
    "action": "the release's own argparse Action for an option",
    "value-check": "the release's own check of an option's value",
    "start-up": "the start-up checks the release runs on a combination of options",
    "choices": "an option's choices, which depend on what the image installs",
    "positional": "a positional argument the entry point may refuse",
    "preprocess": "the release's own rewriting of the argv before parsing",
    "python": "the CPython the image runs",
    "platform": "a platform plugin that may register a value",
    "engine": "the engine the argv starts, against the one declared",
    "spec": "what the plugin reads from the cluster (annotations, the Binding, the container)",
    "release": "an engine release the engine data does not hold (scripts/engine-data --release adds it)",
    "gpu": "the GPU the Pod's Node has, as its labels say it (GPU Feature Discovery, AMD's node labeller)",
    "setting": "the Setting in flight: its spec.value asks for a value its status.value does not report yet",
}


class Cause(Record):
    __slots__ = ("code", "subject")

    def __init__(self, code: str, subject: str):
        self.code = code          # one of CAUSES
        self.subject = subject    # the deciding thing: `$HF_TOKEN`, `--tool-call-parser`, `args[3]`

    def __str__(self):
        return f"{self.code}: {self.subject}" if self.subject else self.code

    def to_dict(self):
        return {"code": self.code, "subject": self.subject}


_VARIABLE = re.compile(r"^\$\(?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])\)?(?![A-Za-z0-9_])")


def of_element(where: str, reason: str) -> Cause:
    """The cause of an element not known from the spec: the variable its reason starts with
    (`$NAME ...`, `$(NAME) ...`: how argv and shell word their reasons), else the element."""
    m = _VARIABLE.match(reason or "")
    if m:
        return Cause("variable", "$" + m.group(1))
    m = re.search(r"(?:^|: |\()\$\(?([A-Za-z_][A-Za-z0-9_]*)\)? (?:comes from|is not set|may be|is set)", reason or "")
    if m:
        return Cause("variable", "$" + m.group(1))
    return Cause("element", where)
