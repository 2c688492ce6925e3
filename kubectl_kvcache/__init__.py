"""kubectl-kvcache: what --kv-cache-dtype every engine of the GPUStack Operator really runs with."""

__version__ = "0.1.0"

# The group/version of every document the plugin writes or reads as its own: -o json|yaml's
# reports (render/kubeobject.py) and the policy file (load/policy.py). Not an API group the
# cluster serves (the operator's `kvcache.gpustack.ai/` is its labels' and annotations' domain).
API_VERSION = "kubectl-kvcache/v1alpha1"
