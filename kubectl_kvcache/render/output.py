"""What -o and --no-headers asked for, and whether the rows span namespaces (the NAMESPACE
column); what that format is (rows, data or a document) is its record's (render/formats). The
document formats (markdown, junit, sarif) also say what was checked and how it was asked for: `command` (the
command line, secrets replaced) and `subject` (render.report.Subject, completed from the snapshot
by `about`)."""

from __future__ import annotations

from kubectl_kvcache.record import Record
from kubectl_kvcache.render.formats import DOCUMENT, FORMATS

TABLE, WIDE, DESCRIBE, JSON, YAML = "table", "wide", "describe", "json", "yaml"


class Output(Record):
    __slots__ = ("format", "headers", "namespaces", "command", "subject", "color", "template", "sort_by",
                 "allow_missing_keys", "show_labels", "labels")

    def __init__(self, format: str = TABLE, headers: bool = True, namespaces: bool = True, command: str = "",
                 subject=None, color: str = "auto", template: str | None = None, sort_by: str | None = None,
                 allow_missing_keys: bool = True, show_labels: bool = False, labels=None):
        self.format = format
        self.headers = headers
        self.namespaces = namespaces    # -A (or files without -n): tables show NAMESPACE, as kubectl's
        self.command = command
        self.subject = subject
        self.color = color          # --color: auto | always | never (render/terminal.py); human formats only
        self.template = template    # -o jsonpath=T / custom-columns=SPEC (the -file forms: the file's text)
        self.sort_by = sort_by      # --sort-by: kubectl's JSONPath the rows are sorted by (render/kubectl_list.py)
        self.allow_missing_keys = allow_missing_keys    # --allow-missing-template-keys (kubectl's default: true)
        self.show_labels = show_labels  # --show-labels: a LABELS column in table and wide (render/kubeobject.py)
        self.labels = labels            # {(kind, namespace, name): labels} of the objects read, for --show-labels

    @property
    def wide(self) -> bool:
        return self.format == WIDE

    @property
    def describe(self) -> bool:
        return self.format == DESCRIBE

    @property
    def structured(self) -> bool:
        """Data (json, yaml) or a document (markdown, junit, sarif), not rows: a command prints no
        human-only lines on stdout then."""
        return FORMATS[self.format].structured

    @property
    def for_people(self) -> bool:
        """A person reads stdout (table, wide, describe): a command may print lines of its own there."""
        return FORMATS[self.format].people

    def about(self, snapshot, files=(), context=None, failing=(), exit_code=None) -> Output:
        """This output, for a document format, knowing what `snapshot` held (its input and
        namespace), the -f files and --context named, what makes a case fail and the exit code
        the run ends with; else itself. With --show-labels, also the labels of what was read."""
        if self.show_labels and self.labels is None:
            from kubectl_kvcache.render.kubeobject import label_index

            self = self.replace(labels=label_index(snapshot))
        if FORMATS[self.format].kind != DOCUMENT:
            return self
        from kubectl_kvcache.render.report import Subject

        from kubectl_kvcache.render.report import now

        return self.replace(subject=Subject(self.command, context, tuple(files), snapshot.source, snapshot.namespace,
                                            tuple(failing), getattr(snapshot, "server", None), now(), exit_code,
                                            tuple((getattr(snapshot, "origins", None) or {}).items())))
