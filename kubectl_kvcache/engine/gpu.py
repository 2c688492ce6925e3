"""The GPU a replica runs on, as the Node's labels say it. Pure: labels in, a Gpu out.

NVIDIA's GPU Feature Discovery (NVIDIA/k8s-device-plugin, internal/lm: the labels its tests
expect, e.g. nvidia.com/gpu.compute.major "8", .minor "0", gpu.family "ampere", gpu.product
"NVIDIA-GeForce-RTX-3090") writes the compute capability as two decimal integers; AMD's node
labeller (ROCm/k8s-device-plugin cmd/k8s-node-labeller) writes amd.com/gpu.family (a two-letter
acronym such as "AI") and amd.com/gpu.product-name (also under beta.amd.com/). Labels are
written by whoever runs the Node: an integer is read as decimal digits only (bounded), a name is
kept only when short and printable; anything else is treated as absent, never guessed.
"""

from __future__ import annotations

from kubectl_kvcache.record import Record

NV_PRODUCT = "nvidia.com/gpu.product"
NV_MAJOR = "nvidia.com/gpu.compute.major"
NV_MINOR = "nvidia.com/gpu.compute.minor"
NV_FAMILY = "nvidia.com/gpu.family"
NV_COUNT = "nvidia.com/gpu.count"
NV_PRESENT = "nvidia.com/gpu.present"
AMD_FAMILY = "amd.com/gpu.family"
AMD_PRODUCT = "amd.com/gpu.product-name"
AMD_BETA = "beta.amd.com/"
_MAX_NAME = 63          # a label value's own limit (Kubernetes)


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

    @property
    def cell(self) -> str:
        """The GPU column: product and compute capability, e.g. NVIDIA-GeForce-RTX-3090/8.6."""
        name = self.product or self.family or self.vendor or "<unlabelled>"
        return f"{name}/{self.compute[0]}.{self.compute[1]}" if self.compute else name

    @property
    def named(self) -> str:
        """The GPU in a sentence: its product and compute capability, as the labels say them."""
        name = self.product or (f"an {self.vendor.upper()} GPU" if self.vendor else "the GPU")
        return f"{name} (compute capability {self.compute[0]}.{self.compute[1]})" if self.compute else name


def _int(value) -> int | None:
    """A label's decimal integer (1-3 ASCII digits), else None."""
    if not isinstance(value, str) or not (1 <= len(value) <= 3) or not all("0" <= c <= "9" for c in value):
        return None
    return int(value)


def _name(value) -> str | None:
    if not isinstance(value, str) or not value or len(value) > _MAX_NAME:
        return None
    return value if all(c.isalnum() or c in "-_. " for c in value) else None


def from_labels(labels) -> Gpu | None:
    """The Node's GPU from its labels (a dict of str -> str); None when `labels` is not a mapping.
    No GPU label at all: Gpu(None, missing=(the compute capability labels,))."""
    if not isinstance(labels, dict):
        return None
    nvidia = [k for k in labels if isinstance(k, str) and k.startswith("nvidia.com/gpu")]
    amd = [k for k in labels if isinstance(k, str) and (k.startswith("amd.com/gpu") or k.startswith(AMD_BETA + "gpu"))]
    if nvidia or not amd:
        major, minor = _int(labels.get(NV_MAJOR)), _int(labels.get(NV_MINOR))
        missing = tuple(k for k, v in ((NV_MAJOR, major), (NV_MINOR, minor)) if v is None)
        return Gpu("nvidia" if nvidia else None, _name(labels.get(NV_PRODUCT)),
                   (major, minor) if major is not None and minor is not None else None,
                   _name(labels.get(NV_FAMILY)), missing)
    product = _name(labels.get(AMD_PRODUCT)) or _name(labels.get(AMD_BETA + "gpu.product-name"))
    family = _name(labels.get(AMD_FAMILY)) or _name(labels.get(AMD_BETA + "gpu.family"))
    return Gpu("amd", product, None, family, () if family else (AMD_FAMILY,))
