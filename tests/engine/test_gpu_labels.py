"""engine/gpu.from_labels against the label sets the labellers really write.

NVIDIA's GPU Feature Discovery: NVIDIA/k8s-device-plugin (and NVIDIA/gpu-feature-discovery)
internal/lm/resource_test.go, TestMigStrategyNoneLabels/TestMigStrategySingleLabels: a full GPU
gets nvidia.com/gpu.compute.major "8", .minor "0", gpu.family "ampere", gpu.product "MOCKMODEL"
(count, replicas, memory beside them); a MIG device under the single strategy gets
gpu.product "MOCKMODEL-MIG-1g.100gb" and no compute labels at all. A real H100 Node as `kubectl
describe node` shows GFD's labels (compute.major=9, compute.minor=0, count=1) and an A100 one on
AKS (compute.major=8, compute.minor=0, count=8) come from public setup guides found with the
search tools. AMD's node labeller: ROCm/k8s-device-plugin cmd/k8s-node-labeller/main_test.go
(amd.com/gpu.family "AI", amd.com/gpu.product-name "Instinct_MI210", beta.amd.com/ twins).
"""

import pytest

from kubectl_kvcache.engine.gpu import AMD_FAMILY, NV_MAJOR, NV_MINOR, Gpu, from_labels

GFD_FULL = {"nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0",
            "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "1",
            "nvidia.com/gpu.memory": "300", "nvidia.com/gpu.product": "MOCKMODEL"}
GFD_MIG_SINGLE = {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.memory": "100",
                  "nvidia.com/gpu.product": "MOCKMODEL-MIG-1g.100gb", "nvidia.com/mig.strategy": "single",
                  "nvidia.com/gpu.multiprocessors": "0", "nvidia.com/gpu.slices.gi": "1"}
H100_NODE = {"nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.count": "1",
             "nvidia.com/gpu.deploy.container-toolkit": "true", "nvidia.com/gfd.timestamp": "1728238737",
             "nvidia.com/cuda.runtime.major": "12", "kubernetes.io/arch": "amd64"}
AMD_MI210 = {"amd.com/gpu.cu-count": "104", "amd.com/gpu.device-id": "740f", "amd.com/gpu.driver-version": "6.10.5",
             "amd.com/gpu.family": "AI", "amd.com/gpu.product-name": "Instinct_MI210", "amd.com/gpu.vram": "64G"}
AMD_BETA_ONLY = {"beta.amd.com/gpu.family": "HPC", "beta.amd.com/gpu.product-name": "Instinct_MI300X",
                 "beta.amd.com/gpu.family.HPC": "1"}


def test_a_full_gpu_as_gfd_labels_it():
    assert from_labels(GFD_FULL) == Gpu("nvidia", "MOCKMODEL", (8, 0), "ampere", ())


def test_a_mig_device_has_no_compute_labels_and_says_which_are_missing():
    got = from_labels(GFD_MIG_SINGLE)
    assert got.vendor == "nvidia" and got.product == "MOCKMODEL-MIG-1g.100gb"
    assert got.compute is None and got.missing == (NV_MAJOR, NV_MINOR)


def test_a_real_h100_node_without_a_product_label_still_has_its_capability():
    got = from_labels(H100_NODE)
    assert got.compute == (9, 0) and got.product is None and got.missing == ()
    assert got.cell == "nvidia/9.0"


def test_amd_labeller_family_and_product():
    assert from_labels(AMD_MI210) == Gpu("amd", "Instinct_MI210", None, "AI", ())
    assert from_labels(AMD_BETA_ONLY) == Gpu("amd", "Instinct_MI300X", None, "HPC", ())
    assert from_labels({"amd.com/gpu.product-name": "Instinct_MI210"}).missing == (AMD_FAMILY,)


def test_no_gpu_label_at_all_names_the_labels_that_would_decide():
    got = from_labels({"kubernetes.io/arch": "amd64"})
    assert got.vendor is None and got.compute is None and got.missing == (NV_MAJOR, NV_MINOR)
    assert from_labels(None) is None and from_labels(["x"]) is None


@pytest.mark.parametrize("major", [" 8", "8 ", "+8", "-8", "8.6", "0x8", "٨", "8" * 4, "", None, 8, True])
def test_a_compute_label_is_decimal_digits_or_absent(major):
    """Labels are written by whoever runs the Node: an int is an int, never coerced."""
    got = from_labels(dict(GFD_FULL, **{NV_MAJOR: major}))
    assert got.compute is None and NV_MAJOR in got.missing


@pytest.mark.parametrize("product", ["a" * 64, "x\x1b[31m", "GPU\nNode", "", 5])
def test_a_name_label_is_short_and_printable_or_absent(product):
    assert from_labels(dict(GFD_FULL, **{"nvidia.com/gpu.product": product})).product is None


def test_to_dict_and_the_cells():
    g = from_labels(dict(GFD_FULL, **{"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-3090",
                                      NV_MAJOR: "8", NV_MINOR: "6"}))
    assert g.to_dict() == {"vendor": "nvidia", "product": "NVIDIA-GeForce-RTX-3090", "computeCapability": "8.6",
                           "family": "ampere"}
    assert g.cell == "NVIDIA-GeForce-RTX-3090/8.6"
    assert g.named == "NVIDIA-GeForce-RTX-3090 (compute capability 8.6)"
    assert from_labels(GFD_MIG_SINGLE).to_dict()["missing"] == [NV_MAJOR, NV_MINOR]
