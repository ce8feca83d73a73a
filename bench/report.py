"""Shared output of scripts/bench.sh sections: one table (figure, value,
conditions) and the section's entry merged into out/bench.json."""
import json


def emit(section, data, rows, cond, json_path, machine, width=40, value_width=12):
    print(f"\n{'figure':{width}} {'value':>{value_width}}  conditions")
    for f, v, c in rows:
        print(f"{f:{width}} {v:>{value_width}}  {c}")
    print(f"conditions: {cond}")
    try:
        j = json.load(open(json_path))
    except (OSError, ValueError):
        j = {}
    j["machine"] = machine
    j[section] = data
    j.setdefault("conditions", {})[section] = cond
    json.dump(j, open(json_path, "w"), indent=2)
    print(f"\nwritten: {json_path}")
