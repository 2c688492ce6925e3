#!/bin/sh
# kubectl (1.26+) runs kubectl_complete-kvcache with the words typed after `kubectl kvcache`
# to complete them; the plugin answers itself, cobra-style. Shipped next to the binary.
exec kubectl-kvcache __complete "$@"
