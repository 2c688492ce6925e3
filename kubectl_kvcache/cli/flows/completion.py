"""`kubectl kvcache completion SHELL` prints a completion script; `__complete WORDS...` (and the
`kubectl_complete-kvcache` executable kubectl 1.26+ runs for `kubectl kvcache <TAB>`) prints the
candidates for the last word, then `:<directive>`, as cobra does.

Names from the cluster (namespaces, Pods, Bindings) are asked with the connection flags typed so
far, each request bounded by a short timeout (KVCACHE_COMPLETION_TIMEOUT seconds, default 2; the
whole listing is abandoned after twice that): completion never hangs, and a cluster that cannot
be reached or refuses the list just completes nothing. Nothing is printed on stderr.
"""

from __future__ import annotations

import os
import threading

from kubectl_kvcache import exitcodes, render
from kubectl_kvcache.cli import completion
from kubectl_kvcache.operator import api
from kubectl_kvcache.cli import connection_flags
from kubectl_kvcache.errors import PluginError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up

if TYPE_CHECKING:
    from kubectl_kvcache.cli.options import CompletionOptions

DEFAULT_TIMEOUT = 2.0
EXECUTABLE = "kubectl-kvcache"


def run(options: CompletionOptions, io) -> int:
    render.document(io.stdout, SCRIPTS[options.shell])
    return exitcodes.OK


def _timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("KVCACHE_COMPLETION_TIMEOUT", DEFAULT_TIMEOUT)))
    except ValueError:
        return DEFAULT_TIMEOUT


def _names(data):
    return [((i.get("metadata") or {}).get("name") or "") for i in (data or {}).get("items") or ()
            if isinstance(i, dict)]


def cluster_names(kind, given):
    """Names of `kind` (namespaces, pods, bindings, contexts, clusters, users) for these flags."""
    from kubectl_kvcache.kube import client as kube

    conn = connection_flags.from_completion(given, f"{_timeout():g}s")
    if kind in ("contexts", "clusters", "users"):
        return kube.kubeconfig_names(conn, kind)
    client = kube.Client(conn)
    query = {"limit": "500"}
    if kind == "namespaces":
        return _names(client.request("GET", "/api/v1/namespaces", query=query))
    ns = given.get("namespace") if isinstance(given.get("namespace"), str) else None
    ns = ns or client.namespace
    if kind == "pods":
        return judged_pods(client, ns, query)
    if kind == "bindings":
        return sorted(_names(client.request("GET", api.collection_path(client, api.BINDING, ns), query=query)))
    return []


def _records(data, build):
    """The records of a list's items; an item the plugin cannot read is left out (verify would
    name it in an error; completion just does not offer it)."""
    found = []
    for obj in (data or {}).get("items") or ():
        try:
            found.append(build(obj))
        except PluginError:
            continue
    return found


def judged_pods(client, ns, query):
    """The Pods verify would judge (judge.verify.candidates, the same rule): a ModelDeployment's
    role replicas, not its router or elastic-EP head Pods, and Pods opted into injection."""
    from kubectl_kvcache.judge import verify
    from kubectl_kvcache.operator import decode, records

    pods: dict = {}
    for selector in ("=".join(api.MD_NAME_LABEL), f"{api.INJECT_LABEL}=true"):
        data = client.request("GET", api.collection_path(client, api.POD, ns), query=dict(query, labelSelector=selector))
        pods.update(((p.namespace, p.name), p) for p in _records(data, decode.pod_record))
    deployments = {}
    if any(p.md_controlled for p in pods.values()):     # a replica or a router: its ModelDeployment's roles say
        data = client.request("GET", api.collection_path(client, api.MODEL_DEPLOYMENT, ns), query=query)
        deployments = {(d.namespace, d.name): d for d in _records(data, decode.deployment_record)}
    snapshot = records.Snapshot(pods=list(pods.values()), deployments=deployments, namespace=ns)
    return sorted({c.pod.name for c in verify.candidates(snapshot)})


def bounded(lister, limit):
    """`lister`, abandoned after `limit` seconds and silenced on any error: completion must not
    hang or print a traceback into the user's prompt."""
    def run_it(kind, given):
        result = []

        def work():
            try:
                result.extend(lister(kind, given))
            except Exception:       # unreachable, forbidden, no kubeconfig: nothing to offer
                if os.environ.get("KVCACHE_DEBUG"):
                    raise
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        thread.join(limit)
        return list(result) if not thread.is_alive() else []
    return run_it


def complete(spec, words, io, lister=None) -> int:
    lister = lister or bounded(cluster_names, 2 * _timeout())
    candidates, directive = completion.complete(spec, completion.strip_protocol(words), lister)
    for c in candidates:
        render.record(io.stdout, *c.split("\t", 1))
    render.line(io.stdout, f":{directive}")
    return exitcodes.OK


# -- the scripts ------------------------------------------------------------------------------
# Each asks `kubectl-kvcache __complete <words before the cursor> <the word at the cursor>` and
# honours the directive's bits: 2 no space after the word, 4 no file names as a fallback.

BASH = r"""# bash completion for kubectl-kvcache        (kubectl kvcache completion bash)
_kubectl_kvcache() {
    local cur words cword
    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref -n =: cur words cword
    else
        cur="${COMP_WORDS[COMP_CWORD]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
    fi
    local out directive
    out=$(kubectl-kvcache __complete "${words[@]:1:cword-1}" "$cur" 2>/dev/null) || return
    directive=${out##*:}
    out=${out%:*}
    [[ $directive =~ ^[0-9]+$ ]] || directive=0
    (( directive & 1 )) && return
    local IFS=$'\n' c
    COMPREPLY=()
    for c in $out; do
        c=${c%%$'\t'*}
        [[ -n $c && $c == "$cur"* ]] && COMPREPLY+=("$c")
    done
    if [[ $cur == *=* && $COMP_WORDBREAKS == *=* ]]; then
        local i; for i in "${!COMPREPLY[@]}"; do COMPREPLY[i]=${COMPREPLY[i]#*=}; done
    fi
    # contexts such as EKS's arn:aws:eks:...: readline replaces only what follows the last ':'
    declare -F __ltrim_colon_completions >/dev/null 2>&1 && __ltrim_colon_completions "$cur"
    (( directive & 2 )) && compopt -o nospace 2>/dev/null
    if (( ${#COMPREPLY[@]} == 0 )) && ! (( directive & 4 )); then
        compopt -o default 2>/dev/null; COMPREPLY=()
    fi
}
complete -o bashdefault -F _kubectl_kvcache kubectl-kvcache
"""

ZSH = r"""#compdef kubectl-kvcache
# zsh completion for kubectl-kvcache          (kubectl kvcache completion zsh)
_kubectl_kvcache() {
    local -a lines cands
    local out directive line
    out=$(kubectl-kvcache __complete "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null) || return 1
    lines=("${(@f)out}")
    directive=${lines[-1]#:}
    lines=("${(@)lines[1,-2]}")
    (( directive & 1 )) && return 1
    for line in $lines; do
        [[ -n $line ]] && cands+=("${line%%$'\t'*}:${${line#*$'\t'}//:/\\:}")
    done
    if (( ${#cands} )); then
        if (( directive & 2 )); then _describe -t values 'kubectl-kvcache' cands -S ''
        else _describe -t values 'kubectl-kvcache' cands; fi
    elif ! (( directive & 4 )); then
        _files
    fi
}
compdef _kubectl_kvcache kubectl-kvcache
"""

FISH = r"""# fish completion for kubectl-kvcache         (kubectl kvcache completion fish)
function __kubectl_kvcache_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l out (kubectl-kvcache __complete $words (commandline -ct) 2>/dev/null)
    or return
    set -l directive (string replace -r '^:' '' -- $out[-1])
    set -e out[-1]
    if test (math "$directive % 2") -eq 1
        return
    end
    printf '%s\n' $out
    if test (count $out) -eq 0; and test (math "floor($directive / 4) % 2") -eq 0
        __fish_complete_path (commandline -ct)
    end
end
complete -c kubectl-kvcache -f -a '(__kubectl_kvcache_complete)'
"""

POWERSHELL = r"""# PowerShell completion for kubectl-kvcache  (kubectl kvcache completion powershell)
Register-ArgumentCompleter -Native -CommandName 'kubectl-kvcache' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $words = @($commandAst.CommandElements | Select-Object -Skip 1 | ForEach-Object { $_.ToString() })
    if ($wordToComplete -ne '' -and $words.Count -gt 0) { $words = @($words | Select-Object -SkipLast 1) }
    $out = @(& kubectl-kvcache __complete @words $wordToComplete 2>$null)
    if ($out.Count -eq 0) { return }
    $directive = [int]($out[-1].TrimStart(':'))
    if ($directive -band 1) { return }
    $out | Select-Object -SkipLast 1 | Where-Object { $_ -ne '' } | ForEach-Object {
        $parts = $_ -split "`t", 2
        $tip = if ($parts.Count -gt 1 -and $parts[1]) { $parts[1] } else { $parts[0] }
        [System.Management.Automation.CompletionResult]::new($parts[0], $parts[0], 'ParameterValue', $tip)
    }
}
"""

SCRIPTS = {"bash": BASH, "zsh": ZSH, "fish": FISH, "powershell": POWERSHELL}
