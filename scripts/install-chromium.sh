#!/usr/bin/env bash
# Install Debian's chromium for the site screenshot test; does nothing when it is already there.
# Idempotent: safe to call from `make` on every run.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium missing: run 'sudo apt-get install -y chromium' (the screenshot test is skipped without it)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version
