"""-o name: `kind.group/name` of each row's object, as kubectl's NamePrinter prints it
(cli-runtime pkg/printers/name.go): the kind lower-cased, the group (none for the core group),
`<unknown>` for an object without a name. What each row names: render/kubeobject.py."""

from __future__ import annotations

from kubectl_kvcache.errors import PluginError


def prepare(fmt: str, argument: str | None):
    return None


def write(data, output, out) -> None:
    from kubectl_kvcache.render.formats.jsonpath import for_terminal

    lines = []
    for item in data.get("items") or []:
        kind = item.get("kind") if isinstance(item, dict) else None
        api_version = item.get("apiVersion") if isinstance(item, dict) else None
        metadata = item.get("metadata") if isinstance(item, dict) else None
        name = (metadata or {}).get("name") if isinstance(metadata, dict) else None
        name = name if isinstance(name, str) and name else "<unknown>"
        if not kind and not api_version:
            raise PluginError("missing apiVersion or kind; try GetObjectKind().SetGroupVersionKind() if you know the type")
        if not kind:
            raise PluginError(f"missing kind for resource with name {name}")
        group = api_version.split("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""
        lines.append(f"{kind.lower()}.{group}/{name}" if group else f"{kind.lower()}/{name}")
    out.write(for_terminal("".join(line + "\n" for line in lines), out))
