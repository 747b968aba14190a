#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on 127.0.0.1 (a free port) and print its SQLAlchemy URL.
#
#   scripts/start-postgres.sh [DIR]       start a cluster under DIR (default: a new temp dir; as root DIR
#                                         must be reachable by the postgres user). Prints two lines:
#                                           dir: DIR
#                                           postgresql+psycopg://USER:PASS@127.0.0.1:PORT/DB   (the last line)
#   scripts/start-postgres.sh --stop DIR  stop it and delete DIR
#
# The cluster is for tests: loopback only, a random password, fsync off. As root it runs as the
# `postgres` user (initdb refuses root). Used by tests/web/test_history.py when
# TRAINMEDIC_TEST_PG_URL is not set; CI can also export the printed URL itself.
set -euo pipefail

find_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
  return 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "${1:-}" = "--stop" ]; then
  dir="${2:?usage: start-postgres.sh --stop DIR}"
  bin="$(find_bindir)" || exit 0
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  exit 0
fi

bin="$(find_bindir)" || { echo "start-postgres: no PostgreSQL server found; run scripts/install-postgres.sh" >&2; exit 3; }
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
  echo "start-postgres: running as root but there is no 'postgres' user to run the server as" >&2
  exit 3
fi

dir="${1:-$(mktemp -d "${TMPDIR:-/tmp}/trainmedic-pg.XXXXXX")}"
mkdir -p "$dir"
if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
password="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$password" > "$dir/pwfile"
if [ "$(id -u)" = 0 ]; then chown postgres: "$dir/pwfile"; fi
chmod 600 "$dir/pwfile"

as_owner "$bin/initdb" -D "$dir/data" -U trainmedic --pwfile="$dir/pwfile" --auth=scram-sha-256 \
  -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 3; }
rm -f "$dir/pwfile"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

started=""
for _ in 1 2 3; do
  port="$(free_port)"
  if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null 2>&1; then
    started=1
    break
  fi
done
if [ -z "$started" ]; then
  echo "start-postgres: the server did not start; see $dir/server.log" >&2
  tail -n 5 "$dir/server.log" >&2 || true
  exit 3
fi

PGPASSWORD="$password" "$bin/createdb" -h 127.0.0.1 -p "$port" -U trainmedic trainmedic
echo "dir: $dir"
echo "postgresql+psycopg://trainmedic:${password}@127.0.0.1:${port}/trainmedic"
