// Run by book/live.py (pycache_wheel): start the site's Pyodide in Node, load the kernel's start-up
// packages, run what a visit runs (PYTHON, from the file named by the second argument), and write
// the bytecode it produced, a zip, to the third argument. Usage:
//   node pycache.js STATIC_PYODIDE_DIR SCRIPT.py OUT.zip PACKAGE...
const { loadPyodide } = require(require("path").resolve(process.argv[2], "pyodide.js"));
const fs = require("fs");

(async () => {
  const [dir, script, out, ...packages] = process.argv.slice(2);
  const pyodide = await loadPyodide({ indexURL: require("path").resolve(dir) + "/" });
  await pyodide.loadPackage(packages, { messageCallback: () => {} });
  pyodide.FS.writeFile("/tmp/t5live_pycache.py", fs.readFileSync(script));
  const data = pyodide.runPython("exec(open('/tmp/t5live_pycache.py').read()); result");
  fs.writeFileSync(out, Buffer.from(data.toJs()));
})().catch((error) => { console.error(error.message || error); process.exit(1); });
