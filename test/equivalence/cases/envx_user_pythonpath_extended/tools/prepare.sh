#!/bin/sh
# the preparation needs the metrics package in extra/ too
PYTHONPATH=$PYTHONPATH:extra python3 tools/prepare.py data.json
