#!/usr/bin/env python3
"""Checks the size of each Rust source file of the workspace's crates by its non-test lines.

A file of `crates/*/src/` may hold at most 500 lines outside its tests: lines of a
`#[cfg(test)]` item (a `mod tests { … }`, a test-only function or import) do not count, and a
file declared by `#[cfg(test)] mod x;` (with everything below it) does not count at all, so unit
tests can stay beside the code they test. The integration tests (`crates/*/tests/`) are all test
code and are not counted.

The files listed in ALLOWED held more than 500 such lines when the check came in; they pass, and
the check says when one of them has grown past the count listed or has come back under the
limit (its entry can then go). Every other file over the limit fails the check.

Every check first runs the self-test of the line count and the module resolution on synthetic
input; `--self-test` runs only that. `--list N` prints every file over N lines."""
import os
import re
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIMIT = 500

# Files over the limit when the check came in, with their non-test lines then.
ALLOWED = {
}

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
TEST_CFG = re.compile(r"#\[cfg\(\s*(?:all\(\s*)?test\s*[,)]")
MOD_DECL = re.compile(r"\bmod\s+(" + IDENT + r")\s*([;{])")
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\s*\]')

# What is not code: a line comment, a block comment (not nested), a raw string, a string, a char
# literal; the leftmost match wins, so a quote inside a comment or `//` inside a string is theirs.
NOT_CODE = re.compile(
    r"//[^\n]*"
    r"|/\*[\s\S]*?\*/"
    r'|(?<!\w)b?r(#*)"[\s\S]*?"\1'
    r'|(?<!\w)b?"(?:\\[\s\S]|[^"\\])*"'
    r"|'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'"
)


def mask(text):
    """The text with every comment, string literal and char literal blanked out (each character
    a space, newlines kept), so that offsets and line numbers are the text's and what is left is
    code."""
    return NOT_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def item_end(code, start):
    """The index just past the item that starts at `start` (after its attributes): its `;` or the
    `}` that closes its body, whichever comes first outside parentheses and brackets."""
    depth = 0
    i = start
    while i < len(code):
        c = code[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth == 0:
            return i + 1
        elif c == "{" and depth == 0:
            braces = 0
            for j in range(i, len(code)):
                if code[j] == "{":
                    braces += 1
                elif code[j] == "}":
                    braces -= 1
                    if braces == 0:
                        return j + 1
            return len(code)
        i += 1
    return len(code)


def attributes_end(code, start):
    """The index past the attributes (`#[…]`, nested brackets included) and blanks at `start`."""
    i = start
    while True:
        while i < len(code) and code[i].isspace():
            i += 1
        if not code.startswith("#[", i):
            return i
        depth = 0
        while i < len(code):
            if code[i] == "[":
                depth += 1
            elif code[i] == "]":
                depth -= 1
                if depth == 0:
                    i += 1
                    break
            i += 1


def test_items(code):
    """The spans (start, end) of the `#[cfg(test)]` items of masked code, each from its
    attribute to its end, outermost only."""
    spans = []
    at = 0
    while m := TEST_CFG.search(code, at):
        end = item_end(code, attributes_end(code, m.start()))
        spans.append((m.start(), end))
        at = end
    return spans


def count(text):
    """(non-test lines, names of the test modules the text declares in files of their own with
    the `#[path]` each gave, or None).

    A line is a test line when it starts (its first non-blank character, or its start if it is
    blank) inside a test item."""
    code = mask(text)
    spans = test_items(code)
    lines = 0
    offset = 0
    for line in code.split("\n"):
        stripped = len(line) - len(line.lstrip())
        point = offset + (stripped if line.strip() else 0)
        if not any(start <= point < end for start, end in spans):
            lines += 1
        offset += len(line) + 1
    if text.endswith("\n"):
        lines -= 1  # the empty piece after the last newline is no line
    test_files = []
    for start, end in spans:
        item = code[start:end]
        if (m := MOD_DECL.search(item)) and m.group(2) == ";":
            path = PATH_ATTR.search(text[start:end])
            test_files.append((m.group(1), path.group(1) if path else None))
    return lines, test_files


def module_files(path, name, given):
    """The files that may hold module `name` declared in file `path` (with `#[path]` `given`)."""
    folder = os.path.dirname(path)
    base = os.path.basename(path)
    if given:
        return [os.path.join(folder, given)]
    if base not in ("lib.rs", "main.rs", "mod.rs"):
        folder = os.path.join(folder, base[: -len(".rs")])
    return [os.path.join(folder, name + ".rs"), os.path.join(folder, name, "mod.rs")]


def test_only(files, counts):
    """The files that only tests compile: declared by a `#[cfg(test)] mod x;`, and every file
    in the folder of such a module."""
    only = set()
    for path, (_, declared) in counts.items():
        for name, given in declared:
            for candidate in module_files(path, name, given):
                candidate = os.path.normpath(candidate)
                if candidate in files:
                    only.add(candidate)
                    below = os.path.join(os.path.dirname(candidate), name) + os.sep
                    if candidate.endswith(os.sep + "mod.rs"):
                        below = os.path.dirname(candidate) + os.sep
                    only.update(f for f in files if f.startswith(below))
    return only


def sizes(root):
    """{path relative to root: non-test lines} of every file of `crates/*/src/` that is not
    test-only."""
    files = set()
    crates = os.path.join(root, "crates")
    for crate in sorted(os.listdir(crates)):
        src = os.path.join(crates, crate, "src")
        for folder, _, names in os.walk(src):
            files.update(os.path.normpath(os.path.join(folder, n)) for n in names if n.endswith(".rs"))
    counts = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            counts[path] = count(f.read())
    skip = test_only(files, counts)
    return {os.path.relpath(p, root): c[0] for p, c in counts.items() if p not in skip}


def problems(found, allowed, limit):
    """(failures, notes): files over `limit` not in `allowed`; allowed files grown past their
    entry or back under the limit, and entries for files that are gone."""
    failures, notes = [], []
    for path, lines in sorted(found.items()):
        if path in allowed:
            if lines <= limit:
                notes.append(f"{path}: {lines} lines, under {limit} now: its ALLOWED entry can go")
            elif lines > allowed[path]:
                notes.append(f"{path}: {lines} lines, grown past its ALLOWED {allowed[path]}")
        elif lines > limit:
            failures.append(f"{path}: {lines} non-test lines, over {limit}: split it along a seam")
    for path in sorted(set(allowed) - set(found)):
        notes.append(f"{path}: listed in ALLOWED but not found: its entry can go")
    return failures, notes


def self_test():
    text = "\n".join([
        "//! a file",              # 1
        "use a::b;",               # 2
        "#[cfg(test)]",            # 3  test
        "use c::d;",               # 4  test
        'const S: &str = "}{";',   # 5
        "/* { */",                 # 6
        "fn f() -> [u8; 2] {",     # 7
        "    [0; 2]",              # 8
        "}",                       # 9
        "",                        # 10
        "#[cfg(test)]",            # 11 test
        "#[path = \"t.rs\"]",      # 12 test
        "mod helpers;",            # 13 test
        "#[cfg(all(test, unix))]", # 14 test
        "fn g() -> [u8; 2] {",     # 15 test
        "    let s = '}';",        # 16 test
        "    [0; 2]",              # 17 test
        "}",                       # 18 test
        "",                        # 19
        "#[cfg(test)]",            # 20 test
        "mod tests {",             # 21 test
        '    const R: &str = r#"}"#;', # 22 test
        "    fn h() {}",           # 23 test
        "}",                       # 24 test
        "fn last() {}",            # 25
    ]) + "\n"
    lines, declared = count(text)
    assert lines == 25 - 15, lines
    assert declared == [("helpers", "t.rs")], declared
    assert count("fn a() {}\n")[0] == 1
    assert count("#[cfg(not(test))]\nfn a() {}\n")[0] == 2
    with tempfile.TemporaryDirectory() as root:
        def write(rel, body):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(body)
        big = "fn f() {}\n" * (LIMIT + 1)
        write("crates/a/src/lib.rs", "mod x;\n#[cfg(test)]\nmod tests;\n")
        write("crates/a/src/x.rs", "#[cfg(test)]\nmod tests;\n" + big[: -len("fn f() {}\n")])
        write("crates/a/src/x/tests.rs", big)
        write("crates/a/src/tests/mod.rs", "mod fake;\n")
        write("crates/a/src/tests/fake.rs", big)
        write("crates/a/src/y.rs", big)
        write("crates/a/tests/it/main.rs", big)
        found = sizes(root)
        assert found == {
            "crates/a/src/lib.rs": 1,
            "crates/a/src/x.rs": LIMIT,
            "crates/a/src/y.rs": LIMIT + 1,
        }, found
        failures, notes = problems(found, {}, LIMIT)
        assert failures == [f"crates/a/src/y.rs: {LIMIT + 1} non-test lines, over {LIMIT}: split it along a seam"], failures
        assert not notes
        failures, notes = problems(found, {"crates/a/src/y.rs": LIMIT + 1, "gone.rs": 600}, LIMIT)
        assert not failures and notes == ["gone.rs: listed in ALLOWED but not found: its entry can go"], notes
        failures, notes = problems(found, {"crates/a/src/y.rs": LIMIT, "crates/a/src/x.rs": 700}, LIMIT)
        assert not failures
        assert notes == [
            f"crates/a/src/x.rs: {LIMIT} lines, under {LIMIT} now: its ALLOWED entry can go",
            f"crates/a/src/y.rs: {LIMIT + 1} lines, grown past its ALLOWED {LIMIT}",
        ], notes


def main():
    self_test()
    if sys.argv[1:] == ["--self-test"]:
        print("check-sizes self-test: ok")
        return 0
    found = sizes(ROOT)
    if sys.argv[1:2] == ["--list"]:
        floor = int(sys.argv[2]) if len(sys.argv) > 2 else LIMIT
        for path, lines in sorted(found.items(), key=lambda p: (-p[1], p[0])):
            if lines > floor:
                print(f"{lines:6} {path}")
        return 0
    failures, notes = problems(found, ALLOWED, LIMIT)
    for note in notes:
        print(f"check-sizes: note: {note}", file=sys.stderr)
    for failure in failures:
        print(f"check-sizes: {failure}", file=sys.stderr)
    if failures:
        return 1
    print(f"check-sizes: ok, {len(found)} files at most {LIMIT} non-test lines or listed ({len(ALLOWED)} listed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
