"""-o yaml: the same data as -o json, as PyYAML's safe dumper writes it, keys in order."""


def write(data, out):
    import yaml

    out.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True))



def write_line(data, out):
    """One document of a stream (`---` first): a --watch event, as -o json's write_line."""
    out.write("---\n")
    write(data, out)
