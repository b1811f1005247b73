#!/usr/bin/env python3
"""Every relative link in the installed docs resolves (issue 50).

    check_doc_links.py DOC_DIR

Reads every *.md under DOC_DIR, takes each markdown link or image target
that is neither a URL nor a pure #anchor, drops its #anchor, and checks that
the file or directory it names exists relative to the linking file. Prints
each broken link and exits 1 if there is one."""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def links(path):
    inside_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line.strip()):
                inside_fence = not inside_fence
                continue
            if inside_fence:
                continue
            # Inline code spans are text, not links.
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                yield number, target


def main():
    root = sys.argv[1]
    broken, checked = [], 0
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".md"):
                continue
            path = os.path.join(folder, name)
            for number, target in links(path):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                checked += 1
                resolved = os.path.join(folder, target.split("#", 1)[0])
                if not os.path.exists(resolved):
                    broken.append(f"{os.path.relpath(path, root)}:{number}: {target}")
    for line in broken:
        print("broken link:", line)
    print(f"{checked} relative links checked, {len(broken)} broken")
    return 1 if broken or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
