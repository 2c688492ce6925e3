import sys

from kubectl_kvcache.cli import main

sys.exit(main())
