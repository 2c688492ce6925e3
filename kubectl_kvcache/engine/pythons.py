"""How argparse differs between the CPythons engine images may run. Generated: do not edit;
run `python tests/conformance/pythons.py --write` (it runs tests/conformance/argparse_probe.py
under the CPython of each pinned Pyodide release from npm; the tier also checks the host's and
pyenv's against it).

MEASURED: the CPython versions measured. PYTHON_DIFFERENCES: difference -> {"alike": the measured
versions grouped by identical behaviour, oldest first; "example": an argv that shows it;
"answers": what each group's argparse does with it}. kvparse.python_dependence detects each
difference in an argv and answers UNKNOWN where the Pythons an image may run fall in more than
one group.
"""

MEASURED = ["3.10.2", "3.11.2", "3.11.3", "3.12.1", "3.12.7", "3.13.2", "3.14.2"]

PYTHON_DIFFERENCES = {
    "explicit-double-dash": {
        "alike": [["3.10.2", "3.11.2", "3.11.3", "3.12.1"], ["3.12.7", "3.13.2", "3.14.2"]],
        "answers": ["ok []", "dies invalid-choice"],
        "example": "m --kv-cache-dtype=--",
    },
    "negative-number-forms": {
        "alike": [["3.10.2", "3.11.2", "3.11.3", "3.12.1", "3.12.7", "3.13.2"], ["3.14.2"]],
        "answers": ["dies missing-value", "ok \"x\""],
        "example": "m --kv-canary -1e5 --kv-cache-dtype x",
    },
}
