"""Talking to the Kubernetes API exactly as kubectl would: the only package that sends a request.

Inside: connection (the flags as given), kubeconfig and kubeconfig_v1 (where and as whom, with
kubectl's rules; goyaml, gourl and proxyenv are the Go rules those depend on), client (paged
lists, watches, patches), transport (HTTP/1.1 framing held to Go's net/http), selector (label
selectors, as apimachinery parses them) and names (object names, as the API server validates them).
"""
