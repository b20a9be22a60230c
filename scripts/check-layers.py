#!/usr/bin/env python3
"""Checks the module layers of crates/llmload/src.

First the top level: prints the import graph of its top-level modules (the `crate::…` paths
their files name, tests aside) and fails on a cycle, on a module below the face that names
`cli`, and on the other rules of docs/architecture.md.

Then every folder: prints the import graph of the modules of each folder (`report/`, `api/`,
`api/client/`, …) and fails on a cycle between them. In a folder, a module is a file `x.rs` or a
folder `x/` with its `x.rs` or `x/mod.rs`, all its files together; module `x` imports its
sibling `y` when a file of `x` names `y` by a `crate::…`, `super::…` or `self::…` path (in a
`use` or inline). The folder's own file (`mod.rs`, or `report.rs` beside `report/`) is the
parent, not a sibling: declaring `mod x;` or re-exporting a child is no import. Test modules
(`#[cfg(test)] mod …`, `tests.rs`) do not count.

Every check first runs the self-test of the path resolution and the cycle search on synthetic
input; `--self-test` runs only that."""
import os
import re
import sys
import tempfile

SRC = os.path.join(os.path.dirname(__file__), "..", "crates", "llmload", "src")
FACE = {"main", "cli", "commands"}
# The report's writers write blocks of the page; of report/ they import only these modules.
WRITERS = {"markdown", "html", "terminal"}
WRITER_IMPORTS = {"page", "table", "plot", "markup"}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
TEST_MOD = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*([;{])")


def strip_code(text):
    """The text without comments, string literals and char literals (each replaced by a space or
    an empty literal), so that braces and paths left are code."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif (m := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not re.match(r"\w", text[i - 1])):
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            i = n if j < 0 else j + len(close)
            out.append('""')
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not re.match(r"\w", text[i - 1]))):
            i += 2 if c == "b" else 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and (m := re.match(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i:])):
            i += m.end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(text, open_at):
    """The index just past the `}` that closes the `{` at `open_at`."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def strip_tests(code):
    """Code without its test modules, and the names of the test modules it declares in files."""
    test_files = set()
    while m := TEST_MOD.search(code):
        if m.group(2) == ";":
            test_files.add(m.group(1))
            code = code[: m.start()] + code[m.end() :]
        else:
            code = code[: m.start()] + code[block_end(code, m.end() - 1) :]
    return code, test_files


def use_paths(tree):
    """The paths of a `use` tree (`a::{b, c::{d, e}, g::*}`, renames cut off), each a list of
    segments; a glob or `self` ends its path at the prefix."""
    tree = re.sub(r"\s+", "", tree)
    paths = []

    def walk(prefix, s):
        # Split a group's members at top-level commas.
        depth, start = 0, 0
        parts = []
        for i, c in enumerate(s):
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for part in parts:
            if not part:
                continue
            brace = part.find("{")
            if brace >= 0:
                head = [x for x in part[:brace].split("::") if x]
                walk(prefix + head, part[brace + 1 : part.rfind("}")])
                continue
            segs = [x for x in part.split("::") if x]
            segs = [x for x in segs if x not in ("*", "self")]
            paths.append(prefix + segs)

    walk([], tree)
    return paths


def file_paths(code):
    """Every `crate::`/`super::`/`self::` path the code names, each a list of segments: those of
    its `use` declarations and those written inline."""
    paths = []
    # `use` trees; `as` renames are cut off before the whitespace is dropped.
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        tree = re.sub(r"\s+as\s+" + IDENT, "", m.group(1))
        paths.extend(use_paths(tree))
    rest = re.sub(r"\buse\s+[^;]+;", " ", code)
    for m in re.finditer(r"\b(?:crate|super|self)(?:\s*::\s*" + IDENT + r")+", rest):
        paths.append(re.sub(r"\s+", "", m.group(0)).split("::"))
    return [p for p in paths if p and p[0] in ("crate", "super", "self")]


def resolve(module, path):
    """An absolute module path (segments from the crate root) of `path` named in `module`."""
    if path[0] == "crate":
        return path[1:]
    base = list(module)
    rest = list(path)
    if rest[0] == "self":
        rest = rest[1:]
    while rest and rest[0] == "super":
        base = base[:-1]
        rest = rest[1:]
    return base + rest


def modules(src):
    """Every non-test source file with its module path, and the children of every module that
    has a folder: {module path: set of child names}."""
    files = {}
    children = {}

    def scan(folder, module):
        names = os.listdir(folder)
        kids = set()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if name.endswith(".rs"):
                stem = name[:-3]
                if stem == "mod" or (folder == src and stem in ("lib", "main")):
                    files[path] = module
                    continue
                kids.add(stem)
                files[path] = module + (stem,)
            elif os.path.isdir(path):
                if os.path.exists(os.path.join(folder, name + ".rs")) or os.path.exists(
                    os.path.join(path, "mod.rs")
                ):
                    kids.add(name)
                    scan(path, module + (name,))
        children[module] = kids

    scan(src, ())
    # Drop test modules: `#[cfg(test)] mod x;` declared in a file takes out its child x.
    texts = {}
    tests = set()
    for path, module in files.items():
        code, test_files = strip_tests(strip_code(open(path, encoding="utf-8").read()))
        texts[path] = code
        tests.update(module + (t,) for t in test_files)
    kept = {p: m for p, m in files.items() if not any(m[: len(t)] == t for t in tests)}
    for t in tests:
        children.get(t[:-1], set()).discard(t[-1])
    return {p: (m, texts[p]) for p, m in kept.items()}, children


def folder_graphs(files, children):
    """For each module with a folder, the import graph of its children: {module: {child: deps}}."""
    graphs = {m: {k: set() for k in kids} for m, kids in children.items() if kids}
    for module, code in files.values():
        named = [resolve(module, p) for p in file_paths(code)]
        for parent, graph in graphs.items():
            depth = len(parent)
            if module[:depth] != parent or len(module) <= depth:
                continue
            own = module[depth]
            if own not in graph:
                continue
            for r in named:
                if len(r) > depth and r[:depth] == list(parent) and r[depth] in graph and r[depth] != own:
                    graph[own].add(r[depth])
    return graphs


def cycles(edges):
    """Each cycle a depth-first search closes, as a list of nodes from and back to its start."""
    found = []
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(edges.get(n, ())):
            if state.get(d) == 1:
                found.append(stack[stack.index(d) :] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    return found


def top_level(src):
    """The import graph of the top-level modules, as the layer rules read it."""
    edges = {}
    known = {n[:-3] if n.endswith(".rs") else n for n in os.listdir(src)}
    for root, _, names in os.walk(src):
        for f in names:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            if f == "tests.rs" or rel == "fixture.rs":
                continue
            name = rel.split(os.sep)[0]
            module = name[:-3] if name.endswith(".rs") else name
            text = open(path, encoding="utf-8").read()
            m = re.search(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)
            text = text[: m.start()] if m else text
            text = re.sub(r"//[^\n]*", "", text)
            names_ = set(re.findall(r"crate::([a-z_]+)", text))
            for group in re.findall(r"crate::\{([^}]*)\}", text):
                names_ |= set(re.findall(r"\b([a-z_]+)\b", group))
            edges.setdefault(module, set()).update(n for n in names_ if n in known and n != module)
    return edges


def main():
    self_test()
    problems = []
    edges = top_level(SRC)
    for m, deps in sorted(edges.items()):
        print(f"{m}: {' '.join(sorted(deps))}")
        if "cli" in deps and m not in FACE:
            problems.append(f"{m} imports cli")
    # Comparing sits above the attempt folder and the results it reads back.
    below_compare = [(m, "compare") for m in ("summary", "report", "attempt")]
    for a, b in [("record", "api"), ("report", "runner")] + below_compare:
        if b in edges.get(a, ()):
            problems.append(f"{a} imports {b}")
    for c in cycles(edges):
        problems.append("cycle: " + " → ".join(c))
    sim_users = set()
    for root, _, files in os.walk(SRC):
        for f in files:
            path = os.path.join(root, f)
            text = open(path, encoding="utf-8").read()
            m = re.search(r"#\[cfg\(test\)\]\s*mod tests\s*\{", text)
            if f.endswith(".rs") and re.search(r"\bllmload_sim::", text[: m.start()] if m else text):
                sim_users.add(os.path.relpath(path, SRC))
    extra = sim_users - {"main.rs", "lib.rs", "commands.rs", "cli.rs", "sim.rs"}
    if extra:
        problems.append("the simulator crate named outside the face and the launcher: " + ", ".join(sorted(extra)))

    files, children = modules(SRC)
    graphs = folder_graphs(files, children)
    for parent in sorted(graphs):
        if not parent:
            continue  # The top level, above.
        folder = "/".join(parent) + "/"
        print(f"\n{folder}")
        for m, deps in sorted(graphs[parent].items()):
            print(f"  {m}: {' '.join(sorted(deps))}")
        for c in cycles(graphs[parent]):
            problems.append(f"cycle in {folder}: " + " → ".join(c))
    problems.extend(writer_problems(graphs))
    for p in problems:
        print("error:", p, file=sys.stderr)
    return 1 if problems else 0


def writer_problems(graphs):
    """The report's writers (markdown, html with html/, terminal) import of report/ only the
    page, the table model, the chart canvas and the escaping."""
    report = graphs.get(("report",), {})
    return [
        f"report/{w} imports report/{d}: a writer imports only {', '.join(sorted(WRITER_IMPORTS))}"
        for w in sorted(WRITERS)
        for d in sorted(report.get(w, ()))
        if d not in WRITER_IMPORTS
    ]


def self_test():
    """Checks the resolution of paths and the cycle search on synthetic input; raises on a
    failure."""
    assert use_paths("crate::report::{charts, markdown::{a, b}, plot::*}") == [
        ["crate", "report", "charts"],
        ["crate", "report", "markdown", "a"],
        ["crate", "report", "markdown", "b"],
        ["crate", "report", "plot"],
    ], use_paths("crate::report::{charts, markdown::{a, b}, plot::*}")
    assert use_paths("super::{self, x}") == [["super"], ["super", "x"]]
    code = strip_code(
        'use super::html::escape as esc;\n// crate::report::gone\nfn f() { let s = "crate::x::y {"; '
        "let c = '{'; super::super::fmt::thousands(1); crate::report::markdown::render(s); }\n"
        "#[cfg(test)]\nmod tests { use crate::report::csv; }\n#[cfg(test)]\npub(crate) mod fixture;\n"
    )
    code, tests = strip_tests(code)
    assert tests == {"fixture"}, tests
    named = [resolve(("report", "phases"), p) for p in file_paths(code)]
    assert named == [
        ["report", "html", "escape"],
        ["fmt", "thousands"],
        ["report", "markdown", "render"],
    ], named
    assert resolve(("api",), ["super", "record"]) == ["record"]
    assert resolve(("api", "conn"), ["self", "x"]) == ["api", "conn", "x"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []
    assert cycles({"html": {"markdown"}, "markdown": {"html", "plot"}, "plot": set()}) == [
        ["html", "markdown", "html"]
    ]
    assert writer_problems({("report",): {"html": {"page", "markup"}, "markdown": {"results", "table"}, "csv": {"results"}}}) == [
        "report/markdown imports report/results: a writer imports only markup, page, plot, table"
    ]
    # A folder: its own file is no sibling, a test module no import, a submodule's file part of
    # its module.
    with tempfile.TemporaryDirectory() as src:
        tree = {
            "lib.rs": "mod a;\n#[cfg(test)]\nmod fixture;\n",
            "fixture.rs": "use crate::a::x;\n",
            "a/mod.rs": "mod x;\nmod y;\npub use x::f;\nfn g() { y::h(); }\n",
            "a/x.rs": "mod inner;\nuse super::g;\n#[cfg(test)]\nmod tests { use super::super::y; }\n",
            "a/x/inner.rs": "pub fn f() { super::super::y::h(); }\n",
            "a/y.rs": "pub fn h() {}\n#[cfg(test)]\nmod tests;\n",
            "a/y/tests.rs": "use crate::a::x;\n",
        }
        for name, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(src, name)), exist_ok=True)
            with open(os.path.join(src, name), "w", encoding="utf-8") as f:
                f.write(text)
        graphs = folder_graphs(*modules(src))
        assert graphs == {(): {"a": set()}, ("a",): {"x": {"y"}, "y": set()}, ("a", "x"): {"inner": set()}}, graphs


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        print("check-layers self-test: ok")
        sys.exit(0)
    sys.exit(main())
