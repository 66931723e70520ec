#!/usr/bin/env bash
# Installs the Node tools the diagram tests check diagrams with (bpmn-moddle, elkjs, mermaid + jsdom) and the
# console's browser tests check pages with (axe-core) into
# node_tools/ at the repository root: a test-only folder, ignored by git. The versions are pinned by
# tests/diagrams/node/package.json and its package-lock.json (`npm ci`, so every machine gets the same tree).
#
# Usage: bash .ci/node-tools.sh        (idempotent: does nothing when node_tools/ already matches the pins)
set -euo pipefail
cd "$(dirname "$0")/.."

source_dir=tests/diagrams/node
target=node_tools
stamp="$target/.installed"

command -v npm >/dev/null 2>&1 || { echo "node-tools: npm is not installed (apt-get install -y nodejs npm)" >&2; exit 1; }

up_to_date() {
  [ -f "$stamp" ] || return 1
  cmp -s "$source_dir/package.json" "$target/package.json" || return 1
  cmp -s "$source_dir/package-lock.json" "$stamp" || return 1
  for package in axe-core bpmn-moddle elkjs jsdom mermaid; do
    [ -f "$target/node_modules/$package/package.json" ] || return 1
  done
}

if up_to_date; then
  echo "node-tools: $target is up to date"
  exit 0
fi

mkdir -p "$target"
rm -f "$stamp"
cp "$source_dir/package.json" "$source_dir/package-lock.json" "$target/"
npm ci --prefix "$target" --no-audit --no-fund --loglevel=error
for package in axe-core bpmn-moddle elkjs jsdom mermaid; do
  version=$(node -p "require('./$target/node_modules/$package/package.json').version")
  echo "node-tools: $package@$version"
done
cp "$source_dir/package-lock.json" "$stamp"
