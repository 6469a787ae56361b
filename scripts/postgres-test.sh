#!/usr/bin/env bash
# A throwaway PostgreSQL server for the test suites (used by `make test`).
#
#   scripts/postgres-test.sh [start] [DIR]   start a cluster in DIR (or reuse the one
#                                            running there) and print, on stdout,
#                                            export SOVEREIGN_TEST_POSTGRES_URL='postgres://…'
#   scripts/postgres-test.sh stop [DIR]      stop that cluster and delete DIR
#   scripts/postgres-test.sh pause [DIR]     stop the server (fast shutdown: open
#                                            sessions are cut), keeping DIR; a
#                                            later start brings it back on the
#                                            same port (the fault tests' outage)
#
# DIR defaults to ${TMPDIR:-/tmp}/sovereign-pgtest. Usage from a shell:
#   eval "$(scripts/postgres-test.sh)"; go test ./...; scripts/postgres-test.sh stop
#
# PostgreSQL comes from the machine (/usr/lib/postgresql/*/bin or initdb on
# PATH); when absent and we are root, it is installed from Debian's packages.
# The server listens on 127.0.0.1 only, on a free port, with trust
# authentication, fsync off (test data is disposable) and its socket in DIR.
# As root, the cluster runs as the `postgres` OS user (initdb refuses root).
# Everything but the export line goes to files in DIR; on failure the
# relevant log is shown on stderr.
set -euo pipefail

cmd=start
case "${1:-}" in
start | stop | pause) cmd=$1; shift ;;
-h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
dir=${1:-${TMPDIR:-/tmp}/sovereign-pgtest}
case "$dir" in /*) ;; *) dir=$PWD/$dir ;; esac
dir=${dir%/}
db=sovereign_test
marker=.sovereign-pgtest

die() { echo "postgres-test: $*" >&2; exit 1; }
show() { [ -f "$1" ] && tail -n 30 "$1" >&2 || true; }

# pg_bin prints the directory holding initdb and pg_ctl, newest version first.
pg_bin() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v initdb)")"; return
	fi
	return 1
}

install_postgres() {
	[ "$(id -u)" = 0 ] || die "PostgreSQL (initdb) not found; install it (apt-get install postgresql) or set SOVEREIGN_TEST_POSTGRES_URL"
	command -v apt-get >/dev/null 2>&1 || die "PostgreSQL (initdb) not found and apt-get is not available; install PostgreSQL or set SOVEREIGN_TEST_POSTGRES_URL"
	# Keep the package from creating (and starting) its own cluster on port
	# 5432: createcluster.conf includes this directory.
	mkdir -p /etc/postgresql-common/createcluster.d
	echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/sovereign-no-main-cluster.conf
	local log=${TMPDIR:-/tmp}/sovereign-pgtest-apt.log
	echo "postgres-test: installing PostgreSQL from Debian packages (log: $log)" >&2
	if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; } >"$log" 2>&1; then
		show "$log"; die "apt-get install postgresql failed"
	fi
}

# as runs a command as the cluster's owner.
as=()
if [ "$(id -u)" = 0 ]; then
	if command -v runuser >/dev/null 2>&1; then as=(runuser -u postgres --); else as=(su postgres -s /bin/sh -c '"$0" "$@"'); fi
fi

running() { [ -f "$dir/data/PG_VERSION" ] && "${as[@]}" "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

url() { echo "export SOVEREIGN_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:$(cat "$dir/port")/$db?sslmode=disable'"; }

stop() {
	[ -e "$dir" ] || return 0
	[ -e "$dir/$marker" ] || die "$dir was not made by this script; not touching it"
	if bin=$(pg_bin) && running; then
		"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >>"$dir/server.log" 2>&1 || { show "$dir/server.log"; die "pg_ctl stop failed"; }
	fi
	rm -rf "$dir" "$dir.lock"
}

pause() {
	[ -e "$dir/$marker" ] || die "$dir was not made by this script; not touching it"
	bin=$(pg_bin) || die "PostgreSQL not found"
	if running; then
		"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >>"$dir/server.log" 2>&1 || { show "$dir/server.log"; die "pg_ctl stop failed"; }
	fi
}

start() {
	if ! bin=$(pg_bin); then
		install_postgres
		bin=$(pg_bin) || die "PostgreSQL installed but initdb not found under /usr/lib/postgresql/*/bin"
	fi
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/sh postgres
	fi
	if [ -e "$dir" ] && [ ! -e "$dir/$marker" ]; then die "$dir exists and was not made by this script"; fi
	mkdir -p "$dir"
	touch "$dir/$marker"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir"
	chmod 700 "$dir"

	if running && [ -s "$dir/port" ]; then url; return; fi

	if [ ! -f "$dir/data/PG_VERSION" ]; then
		rm -rf "$dir/data"
		if ! "${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C -N >"$dir/initdb.log" 2>&1; then
			show "$dir/initdb.log"; die "initdb failed"
		fi
	fi

	local port tries=0
	port=$(cat "$dir/port" 2>/dev/null || true)
	while :; do
		if [ -z "$port" ] || ! port_free "$port"; then
			port=$((20000 + RANDOM % 40000))
			port_free "$port" || { tries=$((tries + 1)); [ $tries -lt 20 ] || die "no free port found"; port=; continue; }
		fi
		echo "$port" >"$dir/port"
		if "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
			-o "-k $dir -h 127.0.0.1 -p $port -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
			start >"$dir/pg_ctl.log" 2>&1 9>&-; then # the server must not inherit the lock
			break
		fi
		tries=$((tries + 1))
		[ $tries -lt 5 ] || { show "$dir/server.log"; show "$dir/pg_ctl.log"; die "could not start PostgreSQL"; }
		port= # perhaps taken meanwhile: try another
	done

	local psql=("${as[@]}" "$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1)
	if [ "$("${psql[@]}" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
		"${psql[@]}" -c "CREATE DATABASE $db" >"$dir/psql.log" 2>&1 || { show "$dir/psql.log"; die "CREATE DATABASE $db failed"; }
	fi
	url
}

# One run at a time per DIR.
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9

"$cmd"
