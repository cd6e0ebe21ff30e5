#!/usr/bin/env python3
# Checks that every relative link in README.md, docs/*.md and the components' READMEs resolves
# to an existing file, and every #anchor to a heading of the target page (GitHub's slugs). Usage: check_links.py REPO_ROOT
import pathlib
import re
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")


def prose_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading: markup dropped, lowercase, punctuation but '-' and '_'
    dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """The anchors of a markdown file's headings; duplicates get -1, -2, ... as on GitHub."""
    if path not in cache:
        seen = {}
        found = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def check(root):
    pages = ([root / "README.md"] + sorted((root / "docs").glob("*.md"))
             + sorted((root / "components").glob("*/README.md")))
    errors = []
    links = 0
    for page in pages:
        for number, line in prose_lines(page.read_text(encoding="utf-8")):
            for target in LINK.findall(INLINE_CODE.sub("", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
                    continue
                links += 1
                where = f"{page.relative_to(root)}:{number}: link '{target}'"
                file_part, _, anchor = target.partition("#")
                dest = (page.parent / file_part).resolve() if file_part else page
                if not dest.exists():
                    errors.append(f"{where}: {dest} does not exist")
                    continue
                if anchor:
                    if dest.suffix != ".md":
                        errors.append(f"{where}: an anchor into a file that is not markdown")
                    elif anchor not in anchors(dest):
                        errors.append(f"{where}: no heading of {dest.name} has the anchor "
                                      f"'#{anchor}' (its anchors: "
                                      f"{', '.join(sorted(anchors(dest)))})")
    return links, errors


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    links, errors = check(root)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} of {links} relative links do not resolve")
        return 1
    print(f"docs links ok: {links} relative links resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
