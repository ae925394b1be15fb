#!/usr/bin/env python3
"""Writes a generator's traffic (scripts/outside-traffic: `label` legit or abuse, an `actor`)
as `train` reads it, with each actor as the archetype, so `train --samples-out` gives samples
that compare.py --actors counts by actor.

    as-training-data.py GENERATED.jsonl OUT.jsonl
"""
import json
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
with open(sys.argv[1]) as generated, open(sys.argv[2], "w") as out:
    for line in generated:
        record = json.loads(line)
        record["label"] = "normal" if record["label"] == "legit" else "abuse"
        record["archetype"] = record.pop("actor")
        out.write(json.dumps(record) + "\n")
