"""Which proxy kubectl's HTTP client uses for a server when the kubeconfig names none: Go's
http.ProxyFromEnvironment (golang.org/x/net@v0.57.0 http/httpproxy: FromEnvironment + ProxyFunc, the
copy vendored in Go's net/http is the same), wrapped by client-go's transport with
k8s.io/apimachinery@v0.37.2 util/net/http.go NewProxierWithNoProxyCIDR when kubectl builds its own
transport (a TLS config or a proxy function is needed; transport/cache.go).
"""

from __future__ import annotations

import ipaddress
import os

_DEFAULT_PORTS = {"http": "80", "https": "443", "socks5": "1080"}


def _env_any(env, *names):
    """httpproxy getEnvAny: the first name set to a non-empty value (upper case first)."""
    for name in names:
        if env.get(name):
            return env[name]
    return ""


def _parse_proxy(text):
    """httpproxy parseProxy: a value without scheme://host is read as http://value."""
    if not text:
        return None
    try:
        from urllib.parse import urlsplit     # only for a proxy URL: commands on files never pay for it

        parts = urlsplit(text)
        if parts.scheme and parts.netloc:
            return text
    except ValueError:
        pass
    return "http://" + text


def _ip(text):
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _split_host_port(text):
    """net.SplitHostPort, or None when `text` has no port."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1:end + 2] != ":":
            return None
        return text[1:end], text[end + 2:]
    if text.count(":") != 1:
        return None
    host, port = text.split(":")
    return host, port


def _idna(host):
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def _no_proxy_matches(no_proxy, host, port):
    """httpproxy config.init + useProxy: True when NO_PROXY says to connect to host:port directly."""
    ip = _ip(host)
    host = host.strip().lower()
    for rule in no_proxy.split(","):
        rule = rule.strip().lower()
        if not rule:
            continue
        if rule == "*":
            return True
        if "/" in rule:
            try:
                if ip is not None and ip in ipaddress.ip_network(rule, strict=False):
                    return True
                continue
            except ValueError:
                pass
        split = _split_host_port(rule)
        rhost, rport = (split if split else (rule, ""))
        if split and not rhost:
            continue
        rip = _ip(rhost)
        if rip is not None and "%" not in rhost:
            if ip is not None and rip == ip and (not rport or rport == port):
                return True
            continue
        if not rhost:
            continue
        if rhost.startswith("*."):
            rhost = rhost[1:]
        match_host = not rhost.startswith(".")
        if match_host:
            rhost = "." + rhost
        rhost = _idna(rhost)
        if ip is None and (host.endswith(rhost) or (match_host and host == rhost[1:])) \
                and (not rport or rport == port):
            return True
    return False


def _sloppy_cidr_hit(no_proxy, host):
    """NewProxierWithNoProxyCIDR: NO_PROXY entries parsed with ParseCIDRSloppy (leading zeros in IPv4
    octets allowed, no spaces trimmed); a server IP inside one is not proxied."""
    ip = _sloppy_ip(host)
    if ip is None:
        return False
    for rule in no_proxy.split(","):
        if "/" not in rule:
            continue
        address, _, bits = rule.partition("/")
        base = _sloppy_ip(address)
        if base is None or not bits.isdigit():
            continue
        try:
            if ip in ipaddress.ip_network(f"{base}/{int(bits)}", strict=False):
                return True
        except ValueError:
            continue
    return False


def _sloppy_ip(text):
    parts = text.split(".")
    if len(parts) == 4 and all(p.isdigit() and p.isascii() and len(p) <= 3 for p in parts):
        try:
            return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
        except ValueError:
            return None
    if ":" in text and "%" not in text:
        try:
            return ipaddress.IPv6Address(text)
        except ValueError:
            return None
    return None


def proxy_for(server_scheme, hostname, port, custom_transport, env=None) -> str | None:
    """The proxy URL from the environment for a request to scheme://hostname:port, or None (direct).
    `custom_transport`: client-go builds its own http.Transport (then the CIDR wrapper applies)."""
    env = os.environ if env is None else env
    https = _env_any(env, "HTTPS_PROXY", "https_proxy")
    http = _env_any(env, "HTTP_PROXY", "http_proxy")
    no_proxy = _env_any(env, "NO_PROXY", "no_proxy")
    if custom_transport and no_proxy and _sloppy_cidr_hit(no_proxy, hostname):
        return None
    if server_scheme == "https":
        proxy = _parse_proxy(https)
    else:
        proxy = _parse_proxy(http)
        if proxy and env.get("REQUEST_METHOD"):
            from kubectl_kvcache.errors import PluginError

            raise PluginError("refusing to use HTTP_PROXY value in CGI environment (REQUEST_METHOD is set), "
                              "as kubectl refuses it; see golang.org/s/cgihttpproxy")
    if proxy is None:
        return None
    host = _idna(hostname)
    port = port or _DEFAULT_PORTS.get(server_scheme, "")
    if host == "localhost":             # compared before lower-casing, as useProxy does
        return None
    ip = _ip(host)
    if ip is not None and (ip.is_loopback or (getattr(ip, "ipv4_mapped", None) or ip).is_loopback):
        return None
    if _no_proxy_matches(no_proxy, host, port):
        return None
    return proxy
