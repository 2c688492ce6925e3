"""kubectl-kvcache: what --kv-cache-dtype every engine of the GPUStack Operator really runs with."""

__version__ = "0.1.0"
