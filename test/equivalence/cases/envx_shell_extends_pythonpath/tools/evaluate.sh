#!/bin/sh
# the evaluation needs the metrics package in extra/
PYTHONPATH=$PYTHONPATH:extra python3 tools/evaluate.py weights.json
