"""Reads, never judges: saved files (-f) or a live cluster into the same records
(operator.records, built by operator.decode). files and manifests read -f, cluster lists a
cluster, reader picks one (and loads ahead while the command imports), recovery reads the full
objects `recover` needs."""
