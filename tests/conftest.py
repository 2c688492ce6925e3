"""Shared test set-up: the tests folder is importable (tests/objects.py builds Kubernetes objects)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
