import json
import os
import random
import sys

import metrics

rng = random.Random(0)
data = [([[rng.gauss(0, 1) for _ in range(8)] for _ in range(8)], [[rng.gauss(0, 1)] for _ in range(8)]) for _ in range(8)]
with open(sys.argv[1], "w") as f:
    json.dump(data, f)
print("prepare: metrics from", os.path.relpath(metrics.__file__))
print("prepare: PYTHONPATH ends with", os.environ.get("PYTHONPATH", "").split(os.pathsep)[-1])
print("prepare: data score %.6f" % metrics.score({i: x for i, (x, _) in enumerate(data)}))
