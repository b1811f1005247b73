#!/usr/bin/env bash
# Copies an npm package from ../shared (read-only input) into the build tree
# and installs its pinned dependencies there (npm ci), so no test ever writes
# node_modules into ../shared. Re-installs only when package-lock.json changed.
#
#   stage_npm_package.sh SRC_DIR DEST_DIR [npm ci flags...]
# Prints DEST_DIR on success.
set -euo pipefail
src="$1"; dest="$2"; shift 2
mkdir -p "$dest"
# Copy every file of the package except an installed tree a user may have left.
(cd "$src" && find . -path ./node_modules -prune -o -type f -print0) |
  while IFS= read -r -d '' f; do
    mkdir -p "$dest/$(dirname "$f")"
    cmp -s "$src/$f" "$dest/$f" || cp "$src/$f" "$dest/$f"
  done
stamp="$dest/node_modules/.jarvis-lock"
if [ ! -f "$stamp" ] || ! cmp -s "$src/package-lock.json" "$stamp"; then
  (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error "$@" >&2)
  cp "$src/package-lock.json" "$stamp"
fi
echo "$dest"
