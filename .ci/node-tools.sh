#!/usr/bin/env bash
# Installs the Node tools the diagram tests validate with (bpmn-moddle, elkjs, mermaid + jsdom) into
# node_tools/ at the repository root: a test-only folder, ignored by git. Idempotent: when node_tools/ already
# holds exactly the pinned versions it does nothing. Usage: bash .ci/node-tools.sh
set -euo pipefail
cd "$(dirname "$0")/.."

manifest=tests/diagrams/node/package.json
target=node_tools

command -v npm >/dev/null 2>&1 || { echo "node-tools: npm is not installed (apt-get install -y nodejs npm)" >&2; exit 1; }

if [ -f "$target/package.json" ] && cmp -s "$manifest" "$target/package.json" && [ -f "$target/.installed" ]; then
  echo "node-tools: $target is up to date"
  exit 0
fi

mkdir -p "$target"
cp "$manifest" "$target/package.json"
rm -f "$target/.installed"
npm install --prefix "$target" --no-audit --no-fund --loglevel=error
node -e '
  const pkg = require("./'"$target"'/package.json");
  for (const name of Object.keys(pkg.dependencies)) {
    const v = require("./'"$target"'/node_modules/" + name + "/package.json").version;
    console.log("node-tools: " + name + "@" + v);
  }'
touch "$target/.installed"
