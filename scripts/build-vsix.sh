#!/usr/bin/env bash
# Build the VS Code extension: install the locked npm packages, compile with tsc, run the unit tests
# with plain Node, and package editors/vscode/trainmedic-<version>.vsix.
# Needs Node.js >= 20 and npm, and the npm registry (or a warm npm cache) for `npm ci`.
# Exit codes: 0 built, 1 a step failed, 2 Node.js/npm missing or too old, 3 the registry is unreachable.
set -euo pipefail

cd "$(dirname "$0")/../editors/vscode"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "build-vsix: $tool is not installed; install Node.js 20 or newer (https://nodejs.org or your package manager)" >&2
    exit 2
  fi
done
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "build-vsix: Node.js $(node --version) is too old; the packager (@vscode/vsce) needs 20 or newer" >&2
  exit 2
fi

version="$(node -p 'require("./package.json").version')"
vsix="trainmedic-${version}.vsix"

echo "build-vsix: npm ci"
npm_log="$(mktemp)"
trap 'rm -f "$npm_log"' EXIT
if ! npm ci --no-audit --no-fund --loglevel=error 2>&1 | tee "$npm_log"; then
  if grep -qE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network' "$npm_log"; then
    echo "build-vsix: the npm registry cannot be reached and the npm cache lacks the packages; retry online" >&2
    exit 3
  fi
  exit 1
fi
echo "build-vsix: tsc"
rm -rf out
npx --no-install tsc -p .
echo "build-vsix: unit tests (node --test)"
node --test out/test/
echo "build-vsix: package $vsix"
rm -f "$vsix"
# --allow-missing-repository: the extension is built locally, not published from a repository page.
npx --no-install vsce package --allow-missing-repository --out "$vsix" </dev/null
echo "build-vsix: built editors/vscode/$vsix"
