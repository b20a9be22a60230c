#!/usr/bin/env python3
"""Checks the module layers of crates/llmload/src: prints the import graph of its top-level
modules (their `use crate::…` and `crate::…` paths, tests aside) and fails on a cycle, on a
module below the face that names `cli`, and on the other rules of docs/architecture.md."""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(__file__), "..", "crates", "llmload", "src")
FACE = {"main", "cli", "commands"}


def top(path):
    rel = os.path.relpath(path, SRC)
    name = rel.split(os.sep)[0]
    return name[:-3] if name.endswith(".rs") else name


def strip_tests(text):
    # Drop `#[cfg(test)] mod tests { … }` blocks and everything after a trailing test module.
    m = re.search(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)
    return text[: m.start()] if m else text


def main():
    edges = {}
    for root, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, SRC)
            if f == "tests.rs" or rel == "fixture.rs":
                continue
            module = top(path)
            text = strip_tests(open(path, encoding="utf-8").read())
            text = re.sub(r"//[^\n]*", "", text)
            names = set(re.findall(r"crate::([a-z_]+)", text))
            for group in re.findall(r"crate::\{([^}]*)\}", text):
                names |= set(re.findall(r"\b([a-z_]+)\b", group))
            mods = {m for m in os.listdir(SRC)}
            known = {n[:-3] if n.endswith(".rs") else n for n in mods}
            edges.setdefault(module, set()).update(n for n in names if n in known and n != module)
    problems = []
    for m, deps in sorted(edges.items()):
        print(f"{m}: {' '.join(sorted(deps))}")
        if "cli" in deps and m not in FACE:
            problems.append(f"{m} imports cli")
    for a, b in [("record", "api"), ("report", "runner")]:
        if b in edges.get(a, ()):
            problems.append(f"{a} imports {b}")
    # Cycle search.
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(edges.get(n, ())):
            if state.get(d) == 1:
                problems.append("cycle: " + " → ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    sim_users = set()
    for root, _, files in os.walk(SRC):
        for f in files:
            path = os.path.join(root, f)
            if f.endswith(".rs") and re.search(r"\bllmload_sim::", strip_tests(open(path, encoding="utf-8").read())):
                sim_users.add(os.path.relpath(path, SRC))
    extra = sim_users - {"main.rs", "lib.rs", "commands.rs", "cli.rs", "sim.rs"}
    if extra:
        problems.append("the simulator crate named outside the face and the launcher: " + ", ".join(sorted(extra)))
    for p in problems:
        print("error:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
