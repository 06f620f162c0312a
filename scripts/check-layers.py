#!/usr/bin/env python3
"""Checks the floor plan (ARCHITECTURE.md, "Layers" and "Workflows"). Exits 1 listing every fault.

The run core is cut in layers (ORDER); a file includes headers of its own layer and below,
never above. A header include/pilot/X.h belongs to the layer of the folder that holds
src/*/X.cpp; the few headers without a .cpp are placed by HEADER_ONLY.

Each workflow (WORKFLOWS) is a folder, src/<workflow>/ with its public headers under
include/pilot/<workflow>/. It stands above the whole core and may include any core header,
its own, and those of the workflows it is declared to build on (USES). The core never names a
workflow: no core file includes a workflow's header, and no core code holds a workflow's
folder-kind name as a string literal. Output kinds are registered values
(include/pilot/output_kind.h): a kind's name is a string literal in its own file alone
(src/records/output_<kind>.cpp), and only the stages, which know what they produce, and the
list in output_kind.cpp take a kind by its accessor. The CLI stands above everything. ASSEMBLY lists the
files that put the workflows together (the registration list, the torch module's table),
which name them by design.
"""
import pathlib
import re
import sys

ORDER = ["platform", "input", "records", "bag", "engine", "stage", "cli"]
CORE = ORDER[:-1]
WORKFLOWS = ["sweep", "fleet", "verdict", "adapt", "load"]
# A workflow that reads another's folders (a decision's sweep or load evidence, a plan's sweep or load basis).
USES = {"verdict": {"sweep", "fleet", "load"}, "fleet": {"sweep"}}
ASSEMBLY = {"src/workflows.cpp", "include/pilot/torch_stage.h"}
HEADER_ONLY = {"limits": "platform", "reasons": "platform", "clock": "platform", "build_info": "platform",
               "folder_files": "platform", "tokenizer": "input",
               "build_flavour": "stage",
               "stage": "engine", "verify": "bag", "torch_stage": "stage", "doctor": "records",
               "run": "engine", "partial_folder": "engine"}
root = pathlib.Path(__file__).resolve().parent.parent
layer_of = dict(HEADER_ONLY)
for cpp in (root / "src").glob("*/*.cpp"):
    if cpp.parent.name in ORDER:
        layer_of.setdefault(cpp.stem, cpp.parent.name)
for wf in WORKFLOWS:
    for h in (root / "include/pilot" / wf).glob("*.h"):
        layer_of[f"{wf}/{h.stem}"] = wf
include = re.compile(r'#include "pilot/((?:[a-z]+/)?[a-z0-9_]+)\.h"')
kind_names = set()
for wf in WORKFLOWS:
    for h in (root / "include/pilot" / wf).glob("*.h"):
        kind_names.update(re.findall(r'kFolderKind\w+ = "([a-z]+)"', h.read_text()))


# Output kinds: each src/records/output_<x>.cpp registers one, `const OutputKindSpec k...{"name", ...`.
output_kinds = {}
for cpp in (root / "src/records").glob("output_*.cpp"):
    m = re.search(r'OutputKindSpec\s+k\w+\{\s*"([^"]+)"', cpp.read_text())
    if m:
        output_kinds[m.group(1)] = f"src/records/{cpp.name}"
# The kinds' accessors, as output_kind.h declares them (`const OutputKindSpec& XOutput();`).
accessors = re.findall(r"const OutputKindSpec& (\w+)\(\);", (root / "include/pilot/output_kind.h").read_text())
accessor = re.compile(r"\b(" + "|".join(accessors or ["NoAccessorDeclared"]) + r")\(\)")
OUTPUT_KIND_LIST = {"src/records/output_kind.cpp", "include/pilot/output_kind.h"}  # the list, its declarations


def code_only(text):
    """The text without comments, so that prose may mention a workflow."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def faults(rel, layer, text):
    """The faults of one file (`rel`, of `layer`), and the includes it makes that have no layer."""
    out, unplaced = [], []
    if str(rel) in ASSEMBLY:
        layer = "assembly"
    for name in include.findall(text):
        target = layer_of.get(name)
        if target is None:
            unplaced.append(f"{rel}: includes pilot/{name}.h, which has no layer")
        elif layer in ("assembly", "cli"):
            continue
        elif target in WORKFLOWS:
            if layer in CORE:
                out.append(f"{rel} ({layer}, the core) includes pilot/{name}.h (workflow {target})")
            elif target != layer and target not in USES.get(layer, set()):
                out.append(f"{rel} (workflow {layer}) includes pilot/{name}.h (workflow {target}, not in USES)")
        elif layer in CORE and ORDER.index(target) > ORDER.index(layer):
            out.append(f"{rel} ({layer}) includes pilot/{name}.h ({target})")
    code = code_only(text)
    # The one exemption: the parameters' key of a generator's settings is the kind's word.
    if str(rel) == "include/pilot/params.h":
        code = code.replace('kGenerationParamsKey = "generation"', "")
    # And the OpenAI API's field for a vector, which is a wire format's word, not a kind's.
    if str(rel) == "src/load/openai_api.cpp":
        code = code.replace('kWireEmbeddingKey = "embedding"', "")
    for kind, home in sorted(output_kinds.items()):
        if str(rel) != home and re.search(rf'"{kind}"', code):
            out.append(f'{rel} names output kind "{kind}" (only {home} may: call through the OutputKindSpec)')
    if layer not in ("stage", "assembly") and str(rel) not in set(output_kinds.values()) | OUTPUT_KIND_LIST:
        for name in sorted(set(accessor.findall(code))):
            out.append(f"{rel} ({layer}) takes output kind {name}() by name (only a stage may; the rest call "
                       "through the OutputKindSpec it holds)")
    if layer in CORE:
        for kind in sorted(kind_names):
            if re.search(rf'"{kind}"', code_only(text)):
                out.append(f'{rel} ({layer}, the core) names workflow folder kind "{kind}"')
    return out, unplaced


# The check must be able to fail: each rule catches a known fault and passes its allowed form.
assert faults("src/engine/x.cpp", "engine", '#include "pilot/sweep/sweep.h"\n')[0]
assert faults("src/engine/x.cpp", "engine", '#include "pilot/merge_x.h"\n')[1]
assert faults("src/input/x.cpp", "input", '#include "pilot/run.h"\n')[0]
assert faults("src/engine/x.cpp", "engine", 'j["folder_kind"] = "sweep";\n')[0]
assert not faults("src/engine/x.cpp", "engine", '// a "sweep" in prose\n#include "pilot/stage.h"\n')[0]
assert faults("src/adapt/x.cpp", "adapt", '#include "pilot/sweep/sweep.h"\n')[0]
assert not faults("src/verdict/x.cpp", "verdict", '#include "pilot/sweep/sweep_files.h"\n#include "pilot/run.h"\n')[0]
assert not faults("src/workflows.cpp", "assembly", '#include "pilot/sweep/sweep_run.h"\n')[0]
assert faults("src/bag/x.cpp", "bag", 'if (kind == "embedding") {}\n')[0]
assert faults("src/fleet/x.cpp", "fleet", 'if (k == &EmbeddingOutput()) {}\n')[0]
assert not faults("src/stage/x.cpp", "stage", 'desc.output = &EmbeddingOutput();\n')[0]
assert not faults("src/bag/x.cpp", "bag", '// an "embedding" in prose\nif (k->vectors) {}\n')[0]
assert not faults("src/engine/x.cpp", "engine", 'ItemOutput o = ItemOutput();\nBatchOutput b = BatchOutput();\n')[0]

bad, unknown = [], []
files = [(h, layer_of.get(h.stem)) for h in (root / "include/pilot").glob("*.h")]
files += [(h, wf) for wf in WORKFLOWS for h in (root / "include/pilot" / wf).glob("*.h")]
files += [(c, c.parent.name) for c in (root / "src").glob("*/*.[ch]*") if c.parent.name in ORDER + WORKFLOWS]
files += [(c, "assembly") for c in (root / "src").glob("*.cpp") if c.name != "main.cpp"]
for path, layer in files:
    rel = path.relative_to(root)
    if layer is None:
        unknown.append(f"{rel}: no layer (add its .cpp to a layer folder or list it in HEADER_ONLY)")
        continue
    found, unplaced = faults(rel, layer, path.read_text())
    bad += found
    unknown += unplaced
for folder in (root / "src").iterdir():
    if folder.is_dir() and folder.name not in ORDER + WORKFLOWS:
        unknown.append(f"src/{folder.name}/: neither a layer nor a workflow (add it to ORDER or WORKFLOWS)")
if not kind_names:
    unknown.append("no workflow folder kinds found (kFolderKind... in include/pilot/<workflow>/*.h)")
if len(accessors) < 2:
    unknown.append("fewer than two output-kind accessors declared in include/pilot/output_kind.h")
if len(output_kinds) != len(list((root / "src/records").glob("output_*.cpp"))) - 1:
    unknown.append("an src/records/output_*.cpp registers no kind the lint can read "
                   "(const OutputKindSpec k...{\"name\", ...)")
if len(output_kinds) < 2:
    unknown.append("fewer than two output kinds found (OutputKindSpec k...{\"name\" in src/records/output_*.cpp)")
for line in unknown + bad:
    print(line)
print(f"layers: {len(files)} files checked, {len(bad)} faults, {len(unknown)} unplaced; "
      f"workflows {', '.join(WORKFLOWS)}; their kinds {', '.join(sorted(kind_names))}; "
      f"output kinds {', '.join(sorted(output_kinds))}")
sys.exit(1 if bad or unknown else 0)
