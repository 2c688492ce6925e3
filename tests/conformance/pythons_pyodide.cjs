// Run argparse_probe.py under one Pyodide release (CPython compiled to WebAssembly) in Node.
//   node pythons_pyodide.cjs PYODIDE_DIR PROBE.py REQUEST.json > answer.json   (an empty file: BEHAVIOURS)
// PYODIDE_DIR holds the npm package `pyodide` (pythons.py installs it into the user cache).
const fs = require("fs");
const path = require("path");

async function main() {
  const [dir, probe, request] = process.argv.slice(2);
  const { loadPyodide } = require(path.join(dir, "pyodide.js"));
  const py = await loadPyodide({ indexURL: dir + path.sep, stdout: () => {}, stderr: () => {} });
  py.globals.set("PROBE_REQUEST", fs.readFileSync(request, "utf8"));
  py.runPython(fs.readFileSync(probe, "utf8").replace('if __name__ == "__main__":', "if False:"));
  process.stdout.write(py.runPython("main(PROBE_REQUEST)") + "\n");
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + "\n");
  process.exit(1);
});
