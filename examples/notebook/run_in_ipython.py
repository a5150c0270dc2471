"""Runs the code cells of a notebook in an in-process IPython shell, as a Jupyter kernel would, and writes what each
cell displayed (HTML and text) to OUT_DIR/cellN.html / .txt. For machines with IPython but without nbclient (the GPU
machines here): python3 run_in_ipython.py NOTEBOOK OUT_DIR"""
import json
import os
import sys

from IPython.core.interactiveshell import InteractiveShell

nb_path, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
shell = InteractiveShell.instance()
shown = []


class Capture:
    """The display publisher's part a kernel would send to the front end: every display's data."""

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kw):
        shown.append(data)

    def clear_output(self, wait=False):
        pass


shell.display_pub.publish = Capture().publish
cells = [c for c in json.load(open(nb_path))["cells"] if c["cell_type"] == "code"]
for i, c in enumerate(cells):
    shown.clear()
    res = shell.run_cell("".join(c["source"]), store_history=True)
    ok = res.error_before_exec is None and res.error_in_exec is None
    err = res.error_in_exec or res.error_before_exec
    html = "\n".join(d.get("text/html", "") for d in shown)
    text = "\n".join(d.get("text/plain", "") for d in shown)
    if res.result is not None:
        text += "\n" + repr(res.result)
    with open(os.path.join(out, "cell%d.html" % i), "w") as f:
        f.write(html)
    with open(os.path.join(out, "cell%d.txt" % i), "w") as f:
        f.write(text)
    print("cell %d: %s, %d displays, %d bytes of HTML%s" % (i, "ok" if ok else "error", len(shown), len(html), "" if ok else ": %r" % err))
