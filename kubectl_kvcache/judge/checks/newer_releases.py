"""6. Engine releases newer than the engine data: judged with the latest release the data has,
which may not be what the newer release accepts. Said as a finding, never passed silently."""

from __future__ import annotations

from kubectl_kvcache import engine as model
from kubectl_kvcache.judge.checks.engines import deployment_engines, injected_engine
from kubectl_kvcache.judge.checks.findings import Finding, finding
from kubectl_kvcache.judge.checks.inputs import target_container

CODE = "engine-newer-than-data"


def _message(at, what):
    profile = at.profile
    return (f"{what} runs {at.long_label}, newer than the plugin's engine data: it was judged with "
            f"{model.DISPLAY_NAMES[at.engine]} {profile.judged_with}'s parser, which may not be what "
            f"{at.name} accepts")


_FIX = ("add the release's data (scripts/engine-data --release ENGINE==VERSION --output FILE, then "
        "--engine-data FILE or ~/.local/share/kubectl-kvcache/engines/), or a plugin release that has it")


def check_newer_releases(deployments, optins, pods) -> list[Finding]:
    found = []
    for md in deployments:
        for at in deployment_engines(md, pods):
            if at.profile.newer_than_data:
                found.append(finding(CODE, (md.namespace, "ModelDeployment", md.name),
                                     _message(at, f"ModelDeployment {md.name}"), _FIX))
    for o in optins:
        container, _ = target_container(o)
        injected = injected_engine(o.annotations, container)
        if injected is not None and injected.profile.newer_than_data:
            found.append(finding(CODE, o.obj, _message(injected, f"{o.kind} {o.name}"), _FIX))
    return found
