"""-o json: json.dump(data, indent=2) and a newline, written in pieces (memory follows a piece,
not the document); a report as an object kubectl reads (render/kubeobject.py: its apiVersion,
each row's apiVersion, kind and metadata)."""

import json

from kubectl_kvcache.render import kubeobject


def write(data, out):
    json.dump(kubeobject.document(data), out, indent=2)
    out.write("\n")



def write_line(data, out):
    """One value on one line (JSON Lines): a --watch event, so that each change is one line."""
    out.write(json.dumps(data, separators=(",", ":")) + "\n")
