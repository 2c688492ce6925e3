"""-o openreports: the report in the OpenReports form (openreports.io/v1alpha1 Report per
namespace and ClusterReport, the CRDs in deploy/crds/ as published by openreports/reports-api),
where the policy working group's PolicyReport moved (Kyverno and Kubewarden write it): the same
results, names and labels as -o policyreport (policyreport.py), the report naming its source."""

from __future__ import annotations

from kubectl_kvcache.render.formats import policyreport

FORM = policyreport.Form("openreports", "openreports.io/v1alpha1", "Report", "ClusterReport", "reports",
                         "clusterreports", source_field=True)


def reports(doc):
    return policyreport.reports(doc, FORM)


def emit(doc, out):
    policyreport.emit(doc, out, FORM)


failed_run = policyreport.failed_run
