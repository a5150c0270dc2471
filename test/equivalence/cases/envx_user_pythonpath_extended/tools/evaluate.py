import json
import os
import sys

import metrics

with open(sys.argv[1]) as f:
    state = json.load(f)
print("evaluate: metrics from", os.path.relpath(metrics.__file__))
print("evaluate: PYTHONPATH ends with", os.environ.get("PYTHONPATH", "").split(os.pathsep)[-1])
print("evaluate: score %.6f" % metrics.score(state))
