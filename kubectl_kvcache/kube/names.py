"""Kubernetes object names, validated as the API server validates them (apimachinery@v0.37.2/
pkg/util/validation/validation.go: IsDNS1123Label, IsDNS1123Subdomain) before any request names
them: a name can never become a path, a query or a subresource.
"""

from __future__ import annotations

import re

from kubectl_kvcache.errors import PluginError

LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LABEL_MAX, SUBDOMAIN_MAX = 63, 253


def is_label(name, limit=LABEL_MAX) -> bool:
    return bool(name) and len(name) <= limit and LABEL.fullmatch(name) is not None


def is_subdomain(name, limit=SUBDOMAIN_MAX) -> bool:
    return bool(name) and len(name) <= limit and SUBDOMAIN.fullmatch(name) is not None


def valid_namespace(name) -> str:
    """A namespace (a DNS-1123 label)."""
    if not is_label(name):
        raise PluginError(f"invalid namespace {name!r}: a namespace is a lowercase RFC 1123 label (at most 63 "
                          f"characters of a-z, 0-9 and '-', starting and ending with a letter or digit)")
    return name


def valid_name(name, what="Pod") -> str:
    """An object name (a DNS-1123 subdomain, as Pods and Bindings have); `what` names the kind."""
    if not is_subdomain(name):
        raise PluginError(f"invalid {what} name {name!r}: a {what} name is a lowercase RFC 1123 subdomain (at most "
                          f"253 characters of a-z, 0-9, '-' and '.', each part starting and ending with a letter or "
                          f"digit)")
    return name
