"""Executes a notebook with a real kernel (nbclient + ipykernel), the way a person runs it top to bottom, and writes
the executed notebook (with every output) to OUT. Usage: run_notebook.py NOTEBOOK OUT [TIMEOUT_S]. Exit 0 even when a
cell raised (the notebook's own cells check what must hold; the caller reads the outputs)."""
import sys

import nbformat
from nbclient import NotebookClient

nb = nbformat.read(sys.argv[1], as_version=4)
timeout = int(sys.argv[3]) if len(sys.argv) > 3 else 600
NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True).execute()
nbformat.write(nb, sys.argv[2])
