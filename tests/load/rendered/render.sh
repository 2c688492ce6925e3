#!/usr/bin/env bash
# Re-render the saved charts and kustomization of this folder with the real tools, each output
# headed by where it came from. Nothing here is fetched: give checkouts of the three public
# repositories at the commits named below, helm and kubectl (the pinned kubectl of
# scripts/test-binaries has `kubectl kustomize`; helm is built once into the user cache dir:
#   GOBIN=~/.cache/kubectl-kvcache/tools/helm-v3.22.0 go install helm.sh/helm/v3/cmd/helm@v3.22.0).
#
#   PRODUCTION_STACK=... CASTAI=... LLMD=... MODELSERVICE=... VLLM_HELM=... HELM=... KUBECTL=... tests/load/rendered/render.sh
#
# PRODUCTION_STACK: github.com/vllm-project/production-stack at a6c01db05f65f556235413ba8dbcfb0c01132fff
# CASTAI:           github.com/castai/helm-charts at daa46281449593e410adc31f7fe169043c116895
# LLMD:             github.com/llm-d/llm-d-inference-scheduler at 520af47896e5f06e43d09aca281a1149187b0ffd
# MODELSERVICE:     github.com/llm-d-incubation/llm-d-modelservice at 3051935eb5a49f6df21cd6aeb5e4f05b98799262
# VLLM_HELM:        github.com/ardge-timwu/vllm-helm at 576266f46d7ee83c904cc37b7b8c2f6d0b2d6db7 (held out)
# The production-stack checkout is rendered from a copy whose helm/Chart.yaml lists no
# dependencies: its two (kube-prometheus-stack, prometheus-adapter, both disabled by default) are
# not vendored in the repository and `helm dependency build` would fetch them from ghcr.io.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${PRODUCTION_STACK:?}" "${CASTAI:?}" "${LLMD:?}" "${MODELSERVICE:?}" "${VLLM_HELM:?}" "${HELM:?}" "${KUBECTL:?}"
# `helm version` of a `go install` build says only v3.22 (no ldflags); the module's version is exact
HELM_VERSION="helm $(go version -m "$HELM" | awk '$1 == "mod" && $2 == "helm.sh/helm/v3" {print $3}')"
KUBECTL_VERSION="$("$KUBECTL" version --client -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')"

header() {  # repo commit path chart command...
  local repo=$1 commit=$2 path=$3 chart=$4; shift 4
  printf '# Rendered test data (tests/load/rendered/render.sh), never edited by hand.\n'
  printf '# source: github.com/%s at %s, %s (%s)\n' "$repo" "$commit" "$path" "$chart"
  printf '# command: %s\n' "$*"
}

work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cp -r "$PRODUCTION_STACK/helm" "$work/ps-helm"
python3 - "$work/ps-helm/Chart.yaml" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
out, skip = [], False
for line in lines:
    if line.startswith("dependencies:"):
        skip = True
        continue
    if skip and (line.startswith(" ") or line.startswith("-")):
        continue
    skip = False
    out.append(line)
open(p, "w").write("\n".join(out))
PY
rm -f "$work/ps-helm/Chart.lock"

cmd=(helm template vllm ./helm --namespace llm-prod -f tutorials/assets/values-02-basic-config.yaml
     -f tests/load/rendered/values/production-stack-optin.yaml)
{ header vllm-project/production-stack a6c01db05f65f556235413ba8dbcfb0c01132fff helm/ "chart vllm-stack 0.1.12, $HELM_VERSION; its two optional dependencies dropped, see render.sh" "${cmd[@]}"
  "$HELM" template vllm "$work/ps-helm" --namespace llm-prod -f "$PRODUCTION_STACK/tutorials/assets/values-02-basic-config.yaml" \
    -f "$HERE/values/production-stack-optin.yaml"; } > "$HERE/production-stack.yaml"

C=charts/castai-hosted-model/child-charts
cmd=(helm template qwen $C/vllm --namespace llm-prod -f tests/load/rendered/values/castai-vllm-optin.yaml)
{ header castai/helm-charts daa46281449593e410adc31f7fe169043c116895 $C/vllm "chart vllm 0.0.46, $HELM_VERSION" "${cmd[@]}"
  "$HELM" template qwen "$CASTAI/$C/vllm" --namespace llm-prod -f "$HERE/values/castai-vllm-optin.yaml"; } > "$HERE/castai-vllm.yaml"

# the same chart without service.name (its parent chart's value): the Deployment has no name
grep -v -e '^service:' -e '^  name: qwen' "$HERE/values/castai-vllm-optin.yaml" > "$work/noname.yaml"
cmd=(helm template qwen $C/vllm --namespace llm-prod -f "<castai-vllm-optin.yaml without service.name>")
{ header castai/helm-charts daa46281449593e410adc31f7fe169043c116895 $C/vllm "chart vllm 0.0.46, $HELM_VERSION" "${cmd[@]}"
  "$HELM" template qwen "$CASTAI/$C/vllm" --namespace llm-prod -f "$work/noname.yaml"; } > "$HERE/bad/castai-vllm-noname.yaml"

cmd=(helm template sgl $C/sglang --namespace llm-prod -f tests/load/rendered/heldout/castai-sglang-optin.yaml)
{ header castai/helm-charts daa46281449593e410adc31f7fe169043c116895 $C/sglang "chart sglang 0.3.0, $HELM_VERSION" "${cmd[@]}"
  "$HELM" template sgl "$CASTAI/$C/sglang" --namespace llm-prod -f "$HERE/heldout/castai-sglang-optin.yaml"; } > "$HERE/heldout/castai-sglang.yaml"

cmd=(kubectl kustomize deploy/environments/dev/p-d)
{ header llm-d/llm-d-inference-scheduler 520af47896e5f06e43d09aca281a1149187b0ffd deploy/environments/dev/p-d "kustomization, kubectl $KUBECTL_VERSION" "${cmd[@]}"
  printf -- '---\n'
  (cd "$LLMD" && "$KUBECTL" kustomize deploy/environments/dev/p-d); } > "$HERE/llm-d-p-d.yaml"

M=charts/llm-d-modelservice
cmd=(helm template ms $M --namespace llm-prod -f examples/values-pd.yaml -f tests/load/rendered/values/modelservice-lws-optin.yaml)
{ header llm-d-incubation/llm-d-modelservice 3051935eb5a49f6df21cd6aeb5e4f05b98799262 $M "chart llm-d-modelservice v0.4.12, $HELM_VERSION" "${cmd[@]}"
  "$HELM" template ms "$MODELSERVICE/$M" --namespace llm-prod -f "$MODELSERVICE/examples/values-pd.yaml" \
    -f "$HERE/values/modelservice-lws-optin.yaml"; } > "$HERE/modelservice-lws.yaml"

# held out: the chart as its own values-simple.yaml renders it (it takes no Pod labels: nothing opts in)
cmd=(helm template vllm . --namespace llm-prod -f values-simple.yaml)
{ header ardge-timwu/vllm-helm 576266f46d7ee83c904cc37b7b8c2f6d0b2d6db7 . "chart vllm 0.0.0-nvdgx, $HELM_VERSION" "${cmd[@]}"
  "$HELM" template vllm "$VLLM_HELM" --namespace llm-prod -f "$VLLM_HELM/values-simple.yaml"; } > "$HERE/heldout/vllm-helm.yaml"
