"""-o yaml: the same data as -o json (render/kubeobject.py), as PyYAML's safe dumper writes it,
keys in order."""

from kubectl_kvcache.render import kubeobject


def write(data, out):
    import yaml

    out.write(yaml.safe_dump(kubeobject.document(data), sort_keys=False, default_flow_style=False,
                             allow_unicode=True))
