"""py:markdown-outline — the heading outline of a Markdown document.

wasi-command convention: one JSON object on stdin, one JSON value on
stdout, exit 1 with {"error": {...}} on bad input. Standard library only.
"""
import json
import re
import sys
import unicodedata

ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
INLINE = [
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images → alt text
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),  # links → text
    (re.compile(r"`([^`]*)`"), r"\1"),  # code spans
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),  # bold
    (re.compile(r"(\*|_)(.+?)\1"), r"\2"),  # italics
]


def plain(text):
    """Heading text without inline Markdown."""
    for pattern, repl in INLINE:
        text = pattern.sub(repl, text)
    return text.strip()


def slug(text, seen):
    """GitHub-style anchor: lower case, punctuation dropped, spaces to
    hyphens, -1, -2 … appended to repeats."""
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -":
            out.append("-")
        elif ch == "_" or cat[0] in "LN":
            out.append(ch)
    base = "".join(out)
    anchor = base
    n = seen.get(base, 0)
    if n:
        anchor = "%s-%d" % (base, n)
    seen[base] = n + 1
    return anchor


def outline(markdown, max_depth, min_depth):
    headings = []
    seen = {}
    fence = None
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    prev = None  # previous line, if it can be a setext heading's text
    for number, line in enumerate(lines, start=1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence, prev = m.group(1), None
            continue
        level, text, at = None, None, number
        m = ATX.match(line)
        if m:
            level, text = len(m.group(1)), m.group(2) or ""
        elif prev is not None and SETEXT.match(line):
            level = 1 if line.strip()[0] == "=" else 2
            text, at = prev, number - 1
        if level is not None:
            prev = None
            if min_depth <= level <= max_depth:
                title = plain(text)
                headings.append({"level": level, "text": title, "line": at, "anchor": slug(title, seen)})
            continue
        stripped = line.strip()
        indented = line.startswith("    ") or line.startswith("\t")
        prev = line.strip() if stripped and not indented and not stripped.startswith(">") else None
    return headings


def render(headings):
    if not headings:
        return ""
    top = min(h["level"] for h in headings)
    return "\n".join("%s- [%s](#%s)" % ("  " * (h["level"] - top), h["text"], h["anchor"]) for h in headings)


def fail(code, message):
    json.dump({"error": {"code": code, "message": message}}, sys.stdout)
    sys.exit(1)


def main():
    try:
        args = json.load(sys.stdin)
    except ValueError as e:
        fail("BAD_INPUT", "arguments are not JSON: %s" % e)
    markdown = args.get("markdown")
    if not isinstance(markdown, str):
        fail("BAD_INPUT", "markdown must be a string")
    max_depth = args.get("maxDepth", 6)
    min_depth = args.get("minDepth", 1)
    if min_depth > max_depth:
        fail("BAD_INPUT", "minDepth %d is greater than maxDepth %d" % (min_depth, max_depth))
    headings = outline(markdown, max_depth, min_depth)
    json.dump({"headings": headings, "count": len(headings), "toc": render(headings)}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
