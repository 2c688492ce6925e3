from kubectl_kvcache.cli import run

run()
