#!/usr/bin/env bash
# ---- documentation links (issue 30) -----------------------------------------------------------
# Dead-link check of README.md and docs/**/*.md, offline: every relative link must name a file
# that exists and, with a #fragment, a heading of that file (GitHub's anchor slugs); links to
# other Markdown files of the repository (nats/README.md#credentials) are followed too. External
# URLs are not fetched. Tools pinned in .ci/docs-check/package-lock.json (remark-cli 12.0.1,
# remark-validate-links 13.1.0). Called by .ci/run; runs alone too: `bash .ci/docs.sh`.
#   bash .ci/docs.sh [ROOT]   check the tree at ROOT (default: this repository)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "${1:-$here/..}" && pwd)"
tools="$here/docs-check"

command -v node >/dev/null || { echo "docs: node is missing (apt-get install nodejs npm)" >&2; exit 1; }
echo "== docs: npm ci (.ci/docs-check)"
(cd "$tools" && npm ci --no-audit --no-fund --loglevel=error)

cd "$root"
[ -f README.md ] && [ -d docs ] || { echo "docs: $root has no README.md and docs/" >&2; exit 1; }
echo "== docs: dead links in README.md and docs/ ($(find docs -name '*.md' | wc -l) pages)"
# --frail: a warning (missing file, missing heading) fails the run; --no-config/--no-ignore: only
# our settings, every file given is checked; --no-stdout: check, never print or rewrite files.
"$tools/node_modules/.bin/remark" --rc-path "$tools/remarkrc.json" --no-config --no-ignore \
  --frail --quiet --no-stdout --no-color --ext md README.md docs
echo "docs: no dead links"
