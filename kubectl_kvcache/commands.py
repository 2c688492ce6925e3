"""Each command: gather a snapshot, judge it, render it, pick the exit code."""

from dataclasses import dataclass
from typing import IO as _Stream

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass
class IO:
    stdin: _Stream
    stdout: _Stream
    stderr: _Stream


def print_notes(snapshot, io):
    for note in snapshot.notes:
        print(f"note: {note}", file=io.stderr)


def print_nothing_found(snapshot, what, io):
    where = f"in {snapshot.namespace} namespace" if snapshot.namespace else "in any namespace"
    if snapshot.source == "file":
        where = "in the input" + (f" (namespace {snapshot.namespace})" if snapshot.namespace else "")
    print(f"No {what} found {where}.", file=io.stderr)


def run_verify(opts, io):
    from kubectl_kvcache import render, sources, verify

    snapshot = sources.load(opts, io, pod_names=tuple(opts.pods))
    print_notes(snapshot, io)
    report = verify.verify(snapshot)
    render.verify_report(report, opts.output, io.stdout, getattr(opts, "no_headers", False))
    if opts.output in ("table", "wide"):
        if opts.pods:
            render.pod_details(report, verify.argv_listing, io.stdout)
        if report.items:
            print(render.verify_summary(report), file=io.stderr)
        else:
            print_nothing_found(snapshot, "pool-attached engine pods", io)
    if opts.pods:
        listed = {i.pod for i in report.items}
        for name in opts.pods:
            if name not in listed:
                print(f"note: pod {name} is neither controlled by a pool-attached ModelDeployment role nor "
                      f"labelled {'kvcache.gpustack.ai/inject'}=true", file=io.stderr)
    return EXIT_OK if all(i.status == verify.OK for i in report.items) else EXIT_FINDINGS


def run(opts, io):
    if opts.command == "verify":
        return run_verify(opts, io)
    if opts.command in ("check", "bindings", "roles"):
        from kubectl_kvcache import check_cmd

        return check_cmd.run(opts, io)
    if opts.command == "setting":
        from kubectl_kvcache import setting_cmd

        return setting_cmd.run(opts, io)
    raise NotImplementedError(opts.command)
