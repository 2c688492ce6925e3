"""-o yaml: the same data as -o json (render/kubeobject.py), as PyYAML's safe dumper writes it,
keys in order. A value met twice (a plan's step naming the object an earlier step names) is
written out each time, never as an anchor and alias (`&id001` / `*id001`): kubectl's YAML has
none, and -o json has none."""

from kubectl_kvcache.render import kubeobject


def write(data, out):
    import yaml

    class Dumper(yaml.SafeDumper):
        def ignore_aliases(self, data):
            return True

    out.write(yaml.dump(kubeobject.document(data), Dumper=Dumper, sort_keys=False, default_flow_style=False,
                        allow_unicode=True))


def write_line(data, out):
    """One document of a stream (`---` first): a --watch event, as -o json's write_line."""
    out.write("---\n")
    write(data, out)
