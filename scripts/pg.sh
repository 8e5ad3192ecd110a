#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and benchmarks, without systemd:
#
#   scripts/pg.sh start DIR [PORT]   initdb into DIR (once), start it on 127.0.0.1:PORT (default
#                                    55432), create the database `vocero`, print its URL
#   scripts/pg.sh stop DIR           stop it (fast shutdown)
#   scripts/pg.sh restart DIR        stop then start again, same data
#   scripts/pg.sh url DIR            the URL of a running cluster
#
# Run as root, the server runs as the `postgres` user (PostgreSQL refuses to run as root); run as
# anyone else, it runs as that user. Durability is traded for speed (fsync off): test data only.
set -euo pipefail

bindir() {
  if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then
    pg_config --bindir
    return
  fi
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  if [ -z "$found" ]; then
    echo "pg.sh: no PostgreSQL server binaries (apt-get install postgresql)" >&2
    exit 1
  fi
  echo "$found"
}

as_owner() {
  if [ "$(id -u)" = "0" ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

cmd="${1:?usage: pg.sh start|stop|restart|url DIR [PORT]}"
dir="${2:?usage: pg.sh start|stop|restart|url DIR [PORT]}"
port="${3:-}"
BIN="$(bindir)"
data="$dir/data"
user="$( [ "$(id -u)" = "0" ] && echo postgres || id -un )"

url() {
  echo "postgresql://$user@127.0.0.1:$(cat "$dir/port")/vocero"
}

start() {
  mkdir -p "$dir"
  [ "$(id -u)" = "0" ] && chown postgres: "$dir"
  if [ ! -f "$data/PG_VERSION" ]; then
    as_owner "$BIN/initdb" -D "$data" -U "$user" -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  if [ -n "$port" ]; then
    echo "$port" >"$dir/port"
  elif [ ! -f "$dir/port" ]; then
    echo 55432 >"$dir/port"
  fi
  as_owner "$BIN/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start -o \
    "-p $(cat "$dir/port") -k $dir -c listen_addresses=127.0.0.1 -c fsync=off \
     -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" >/dev/null
  if ! as_owner "$BIN/psql" -h 127.0.0.1 -p "$(cat "$dir/port")" -U "$user" -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = 'vocero'" | grep -q 1; then
    as_owner "$BIN/createdb" -h 127.0.0.1 -p "$(cat "$dir/port")" -U "$user" vocero
  fi
  url
}

stop() {
  as_owner "$BIN/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  url) url ;;
  *) echo "pg.sh: unknown command $cmd" >&2; exit 2 ;;
esac
