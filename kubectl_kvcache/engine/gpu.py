"""The GPU a replica runs on, as the Node's labels say it (GPU Feature Discovery on NVIDIA:
nvidia.com/gpu.product, nvidia.com/gpu.compute.major/.minor, nvidia.com/gpu.family; AMD's
labeller: amd.com/gpu.family and the product name). Pure: labels in, a Gpu out. (Skeleton: the
record the helpers share; the label reader lands with issue 49.)
"""

from __future__ import annotations

from kubectl_kvcache.record import Record


class Gpu(Record):
    """One Node's GPU as its labels say it (None fields: the label is absent)."""

    __slots__ = ("vendor", "product", "compute", "family", "missing")

    def __init__(self, vendor: str | None, product: str | None = None, compute: tuple[int, int] | None = None,
                 family: str | None = None, missing: tuple[str, ...] = ()):
        self.vendor = vendor            # "nvidia" | "amd" | None (no GPU label at all)
        self.product = product          # e.g. "NVIDIA-GeForce-RTX-3090"
        self.compute = compute          # NVIDIA compute capability (major, minor)
        self.family = family            # e.g. "ampere", AMD's "AI" / gfx family
        self.missing = missing          # the labels that would decide, absent on the Node

    def to_dict(self):
        return {"vendor": self.vendor, "product": self.product,
                "computeCapability": None if self.compute is None else f"{self.compute[0]}.{self.compute[1]}",
                "family": self.family} | ({"missing": list(self.missing)} if self.missing else {})
