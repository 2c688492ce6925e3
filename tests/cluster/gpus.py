"""The GPUs of the stand-in kubelet's Nodes, for the test cluster and scripts/demo-cluster only,
and the labels GPU Feature Discovery puts on a Node that has them.

The labels are built as NVIDIA's labeller builds them (NVIDIA/k8s-device-plugin
internal/lm/resource.go, which gpu-feature-discovery runs): NewGPUResourceLabeler over the
resource `nvidia.com/gpu` writes
- `nvidia.com/gpu.product`: the NVML device name with every space replaced by `-`
  (productLabel: strings.ReplaceAll(p, " ", "-")),
- `nvidia.com/gpu.count`, `nvidia.com/gpu.replicas` (1 with a config that shares nothing: replicasLabel),
- `nvidia.com/gpu.memory`: the total memory in MiB (GetTotalMemoryMB),
- `nvidia.com/gpu.family`, `nvidia.com/gpu.compute.major`, `nvidia.com/gpu.compute.minor`
  (newArchitectureLabels: the CUDA compute capability and getArchFamily of it, whose switch
  calls every major 8 "ampere", 8.9 included, and 9 "hopper").
Only the values below are the stand-in's (a device's NVML name, memory and capability as
nvidia-smi reports them for that board); the keys and their spelling are the labeller's.
"""

from __future__ import annotations


class Device:
    """One GPU model as NVML reports it."""

    def __init__(self, name, memory_mib, major, minor):
        self.name, self.memory_mib, self.major, self.minor = name, memory_mib, major, minor


H100 = Device("NVIDIA H100 80GB HBM3", 81559, 9, 0)
A100 = Device("NVIDIA A100-SXM4-80GB", 81920, 8, 0)
RTX3090 = Device("NVIDIA GeForce RTX 3090", 24576, 8, 6)


def arch_family(major, minor):
    """getArchFamily (internal/lm/resource.go), its switch as written."""
    if major == 7:
        return "volta" if minor < 5 else "turing"
    return {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 8: "ampere",
            9: "hopper"}.get(major, "undefined")


def gfd_labels(device, count=1):
    """The `nvidia.com/gpu.*` labels GFD writes for `count` full GPUs of `device`, sharing off."""
    labels = {"nvidia.com/gpu.product": device.name.replace(" ", "-"),
              "nvidia.com/gpu.count": str(count),
              "nvidia.com/gpu.replicas": "1",
              "nvidia.com/gpu.memory": str(device.memory_mib)}
    if device.major:
        labels.update({"nvidia.com/gpu.family": arch_family(device.major, device.minor),
                       "nvidia.com/gpu.compute.major": str(device.major),
                       "nvidia.com/gpu.compute.minor": str(device.minor)})
    return labels


# The stand-in kubelet's Nodes: the first is where a Pod goes unless told otherwise (the Node the
# existing scenes use); the others make a mix that decides something (fp8 below compute 8.9).
NODES = {
    "kvcache-node": H100,
    "gpu-a100-01": A100,
    "gpu-rtx3090-01": RTX3090,
}
