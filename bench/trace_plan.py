"""The path of a conversation's messages through one ``plan_prompt``: which files they pass, in how many steps.

A step is a call into another contextfit file that receives the caller's
messages (the list, one of its message dicts, or a list starting with one);
calls inside a file and calls out of the package are not steps. Reported: the files passed, the steps,
how often a step goes back down a layer after having been higher, and how often
``inputs/messages.py`` is entered. The layer of a file is its top folder's rank
in ``tests/test_imports.py``-style order (base < inputs < tokens < engine folders
< serving < views). Run it on another tree with ``--tree DIR`` (that tree's own
package): ``python -m bench.trace_plan --tree /tmp/before``.

The measure is the interpreter's own call events, so it is the same for any
tree; it is not a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, sys
from pathlib import Path
import contextfit
pkg = str(Path(contextfit.__file__).resolve().parent)
layers = {"errors": 0, "environment": 0, "caches": 0, "text": 0, "limits": 0, "jsonpath": 0, "amounts": 0,
          "inputs": 1, "tokens": 2, "engine": 3, "fitting": 3, "pipeline": 4, "replays": 5, "retention": 6,
          "serving": 7, "views": 8, "dashboard": 8, "cli.py": 9, "__init__.py": 10}
sample = Path(pkg) / "data" / "samples" / "roleplay.json"
load = getattr(contextfit, "load_conversation")
conversation = load(sample.read_text())
contextfit.plan_prompt(conversation, model="gpt-4o", context_strategy="summarize")  # warm: imports, vocabulary
steps = []
given = conversation.messages
watched = {id(given), *map(id, given)}
def carries(frame):
    # a call receives the caller's messages: the list, one of its dicts, or a list holding them
    for value in frame.f_locals.values():
        if id(value) in watched:
            return True
        if type(value) is list and value and id(value[0]) in watched:
            return True
    return False
def profile(frame, event, arg):
    if event != "call":
        return
    name = frame.f_code.co_filename
    if name.startswith(pkg) and carries(frame):
        rel = name[len(pkg) + 1:]
        if not steps or steps[-1] != rel:
            steps.append(rel)
sys.setprofile(profile)
contextfit.plan_prompt(conversation, model="gpt-4o", context_strategy="summarize")
sys.setprofile(None)
def layer(rel):
    top = rel.split("/")[0]
    return layers.get(top, layers.get(rel, 0))
downs = sum(1 for a, b in zip(steps, steps[1:]) if layer(b) < layer(a))
print(json.dumps({"files": len(set(steps)), "steps": len(steps) - 1, "down_a_layer": downs,
                  "messages_py_entered": sum(1 for s in steps if s == "inputs/messages.py"),
                  "path": steps}))
"""


def trace(tree: Path) -> dict:
    """The trace of ``plan_prompt`` in a fresh process of ``tree``'s package."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=tree, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trace_plan", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, help="also trace the package of this source tree (e.g. the tree before)")
    parser.add_argument("--path", action="store_true", help="print the files in call order")
    args = parser.parse_args(argv)
    trees = [("this tree", ROOT)] + ([("other tree", args.tree)] if args.tree else [])
    print("| tree | files | steps | back down a layer | inputs/messages.py entered |")
    print("|---|--:|--:|--:|--:|")
    for name, tree in trees:
        found = trace(tree)
        print(f"| {name} | {found['files']} | {found['steps']} | {found['down_a_layer']} | {found['messages_py_entered']} |")
        if args.path:
            print(" → ".join(found["path"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
