"""Go's rules for the pieces of a URL kubectl reads (net/url unescape and EscapedPath, path.Clean,
net.ParseIP), pure: the decoder (kubeconfig.py) and the transport both need them, and only the
transport talks to the network."""

from __future__ import annotations

_HEX = frozenset(b"0123456789abcdefABCDEF")
_PATH_SAFE = frozenset(b"$&*+,-./:;=@_~ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def go_unescape(text: str) -> str:
    """net/url unescape (path and userinfo modes): every % needs two hex digits, else the error
    Go gives, `invalid URL escape "%zz"`; the bytes decoded are read as UTF-8 (Go keeps them raw)."""
    out, i = bytearray(), 0
    raw = text.encode("utf-8", "surrogateescape")
    while i < len(raw):
        if raw[i] == 0x25:
            bad = i + 2 >= len(raw) or raw[i + 1] not in _HEX or raw[i + 2] not in _HEX
            if bad:
                raise ValueError(f"invalid URL escape {raw[i:i + 3].decode('utf-8', 'replace')!r}".replace("'", '"'))
            out.append(int(raw[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "surrogateescape")


def go_escape_path(text: str) -> str:
    """net/url URL.EscapedPath of a URL built from a decoded Path (client-go rest/request.go URL
    sets Path only): every byte but alphanumerics and `$&*+,-./:;=@_~` as %XX (checked against
    go1 url.URL{Path: c}.EscapedPath for every printable ASCII byte)."""
    return "".join(chr(b) if b in _PATH_SAFE else f"%{b:02X}" for b in text.encode("utf-8", "surrogateescape"))


def go_clean(path: str) -> str:
    """path.Clean as client-go's path.Join("/", base.Path, ...) applies it to the prefix; "" for "/"."""
    import posixpath

    if not path:
        return ""
    cleaned = posixpath.normpath("/" + path)
    cleaned = "/" + cleaned.lstrip("/")
    return "" if cleaned == "/" else cleaned


def go_ip(host: str):
    """net.ParseIP's answer for a host (an ipaddress object) or None: dotted decimal IPv4 without
    leading zeros, or IPv6 (a zone is split off as the dialer does). None is a name to resolve:
    `127.000.000.001` or `0x7f.1` are names to Go, addresses to inet_aton."""
    import ipaddress

    try:
        return ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return None
