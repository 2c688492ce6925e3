"""`admission`: read as check reads (load), build the policies (judge/admission.py), print them
(render). Exit 0: the policies are printed; what the snapshot could not say is noted on stderr."""

from __future__ import annotations

from kubectl_kvcache import exitcodes, render
from kubectl_kvcache.judge import admission
from kubectl_kvcache.load import reader

TYPE_CHECKING = False

if TYPE_CHECKING:
    from kubectl_kvcache.cli.options import AdmissionOptions


def run(options: AdmissionOptions, io) -> int:
    snapshot = reader.read(options.connection, options.scope, io.stdin, render.tracer(io.stderr))
    render.notes(snapshot, io.stderr)
    namespace = None if options.scope.all_namespaces else snapshot.namespace
    document = admission.generate(snapshot, options.actions, namespace)
    render.structured(document, options.format, io.stdout)
    return exitcodes.OK
