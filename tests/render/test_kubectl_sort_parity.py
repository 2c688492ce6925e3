"""--sort-by on more than 12 rows, where Go's sort.Sort is pdqsort (not an insertion sort) and
equal keys end where its partitioning leaves them: the plugin's sort (render/kubectl_list.py)
against the real kubectl on a document of 50 rows with many equal keys, built from the example's
verify rows (each copied under five names)."""

import io

import pytest

import kubectl_parity
from kubectl_kvcache.render import kubectl_list
from kubectl_kvcache.render.formats import name as name_printer
from kubectl_kvcache.render.output import Output


def _many():
    doc, _ = kubectl_parity.document("verify")
    items = []
    for k in range(5):
        for item in doc["items"]:
            meta = dict(item["metadata"], name=f"{item['metadata']['name']}-{k}")
            items.append(dict(item, metadata=meta))
    return dict(doc, items=items)


@pytest.mark.parametrize("key", [".status", ".state.restarts", ".engine", ".binding", ".metadata.name",
                                 ".state.lastExitCode", ".expected", ".role", ".outcome", ".effective"])
def test_sort_of_many_rows_is_kubectls(pinned_kubectl, tmp_path, key):
    doc = _many()
    kubectl = kubectl_parity.Kubectl(pinned_kubectl, doc, str(tmp_path))
    try:
        code, out, err = kubectl.run(["-o", "name", "--sort-by", key])
    finally:
        kubectl.close()
    assert code == 0, err
    mine = io.StringIO()
    name_printer.write(kubectl_list.listed(doc, key), Output(format="name"), mine)
    assert mine.getvalue().encode() == out
