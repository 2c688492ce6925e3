// The Go client oracle of tests/test_transport.py, built with kubectl's GODEBUG defaults
// (k8s.io/kubernetes@v1.37.2/go.mod: go 1.26.0, godebug default=go1.26): without a go.mod a
// program gets old defaults (httplaxcontentlength=1 reads an empty Content-Length as none).
module kubectl-kvcache/tests/transport_oracle

go 1.26.0

godebug default=go1.26
