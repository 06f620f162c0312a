#!/usr/bin/env python3
"""Checks that no file includes a header of a higher layer (ARCHITECTURE.md, "Layers").

A header include/pilot/X.h belongs to the layer of the folder that holds src/*/X.cpp; the
few headers without a .cpp are placed by HEADER_ONLY. Exits 1 listing every upward arrow.
"""
import pathlib
import re
import sys

ORDER = ["platform", "input", "records", "bag", "engine", "stage", "cli"]
HEADER_ONLY = {"limits": "platform", "reasons": "platform", "clock": "platform", "build_info": "platform",
               "folder_files": "platform",
               "build_flavour": "stage",
               "stage": "engine", "verify": "bag", "torch_stage": "stage", "doctor": "records",
               "run": "engine"}
root = pathlib.Path(__file__).resolve().parent.parent
layer_of = dict(HEADER_ONLY)
for cpp in (root / "src").glob("*/*.cpp"):
    if cpp.parent.name in ORDER:
        layer_of.setdefault(cpp.stem, cpp.parent.name)
include = re.compile(r'#include "pilot/([a-z0-9_]+)\.h"')
bad, unknown = [], []
files = [(h, layer_of.get(h.stem)) for h in (root / "include/pilot").glob("*.h")]
files += [(c, c.parent.name) for c in (root / "src").glob("*/*.[ch]*") if c.parent.name in ORDER]
for path, layer in files:
    rel = path.relative_to(root)
    if layer is None:
        unknown.append(f"{rel}: no layer (add its .cpp to a layer folder or list it in HEADER_ONLY)")
        continue
    for name in include.findall(path.read_text()):
        target = layer_of.get(name)
        if target is None:
            unknown.append(f"{rel}: includes pilot/{name}.h, which has no layer")
        elif ORDER.index(target) > ORDER.index(layer):
            bad.append(f"{rel} ({layer}) includes pilot/{name}.h ({target})")
for line in unknown + bad:
    print(line)
print(f"layers: {len(files)} files checked, {len(bad)} upward includes, {len(unknown)} unplaced")
sys.exit(1 if bad or unknown else 0)
