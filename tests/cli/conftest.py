"""Fixtures the CLI tests share."""

import json

import objects as o
import pytest
import yaml


@pytest.fixture
def write(tmp_path):
    """write(*objects, name=, fmt=): the objects saved as one kubectl List (JSON) or a YAML stream
    in tmp_path, for -f; its path."""
    def _write(*objects, name="objs.json", fmt="json"):
        path = tmp_path / name
        path.write_text(json.dumps(o.as_list(*objects)) if fmt == "json" else yaml.safe_dump_all(objects))
        return str(path)
    return _write
