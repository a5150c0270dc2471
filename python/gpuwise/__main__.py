"""`python -m gpuwise ARGS`: the gpuwise command of the pip package, for where its console script is not on
PATH (a `pip install --user`, a conda environment not activated)."""
import sys

from gpuwise._command import main

sys.exit(main())
