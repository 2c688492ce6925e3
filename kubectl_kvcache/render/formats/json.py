"""-o json: json.dump(data, indent=2) and a newline, written in pieces (memory follows a piece,
not the document)."""

import json


def write(data, out):
    json.dump(data, out, indent=2)
    out.write("\n")



def write_line(data, out):
    """One value on one line (JSON Lines): a --watch event, so that each change is one line."""
    out.write(json.dumps(data, separators=(",", ":")) + "\n")
