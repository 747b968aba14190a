#!/usr/bin/env bash
# Install Debian's PostgreSQL server for the web history tests; does nothing when it is already there.
# Idempotent: safe to call from `make` on every run. Without root it only says what to run (the
# PostgreSQL tests then skip, saying why).
set -euo pipefail

have_initdb() {
  command -v initdb >/dev/null 2>&1 && return 0
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null 2>&1
}

if have_initdb; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "postgresql missing: run 'sudo apt-get install -y postgresql' (the PostgreSQL history tests are skipped without it)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends postgresql >/dev/null
ls -d /usr/lib/postgresql/*/bin
