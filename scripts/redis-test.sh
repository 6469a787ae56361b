#!/usr/bin/env bash
# A throwaway Redis server for the test suites (used by `make test`).
#
#   scripts/redis-test.sh [start] [DIR]   start a server in DIR (or reuse the one
#                                         running there) and print, on stdout,
#                                         export SOVEREIGN_TEST_REDIS_URL='redis://…'
#   scripts/redis-test.sh stop [DIR]      stop that server and delete DIR
#   scripts/redis-test.sh pause [DIR]     stop the server, keeping DIR; a later
#                                         start brings it back on the same port
#                                         (empty: it keeps nothing)
#
# DIR defaults to ${TMPDIR:-/tmp}/sovereign-redistest. redis-server comes from
# the machine; when absent and we are root, it is installed from Debian's
# packages (the package's own service is not used). The server listens on
# 127.0.0.1 only, on a free port, without persistence (test data is
# disposable). Everything but the export line goes to files in DIR; on
# failure the log is shown on stderr.
set -euo pipefail

cmd=start
case "${1:-}" in
start | stop | pause) cmd=$1; shift ;;
-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
dir=${1:-${TMPDIR:-/tmp}/sovereign-redistest}
case "$dir" in /*) ;; *) dir=$PWD/$dir ;; esac
dir=${dir%/}
marker=.sovereign-redistest

die() { echo "redis-test: $*" >&2; exit 1; }
show() { [ -f "$1" ] && tail -n 30 "$1" >&2 || true; }

install_redis() {
	[ "$(id -u)" = 0 ] || die "redis-server not found; install it (apt-get install redis-server) or set SOVEREIGN_TEST_REDIS_URL"
	command -v apt-get >/dev/null 2>&1 || die "redis-server not found and apt-get is not available"
	local log=${TMPDIR:-/tmp}/sovereign-redistest-apt.log
	echo "redis-test: installing redis-server from Debian packages (log: $log)" >&2
	# policy-rc.d keeps the package from starting its own server on 6379.
	local rc=/usr/sbin/policy-rc.d made=
	if [ ! -e "$rc" ]; then printf '#!/bin/sh\nexit 101\n' >"$rc" && chmod +x "$rc" && made=1; fi
	if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server; } >"$log" 2>&1; then
		[ -n "$made" ] && rm -f "$rc"
		show "$log"; die "apt-get install redis-server failed"
	fi
	[ -n "$made" ] && rm -f "$rc"
	return 0
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

url() { echo "export SOVEREIGN_TEST_REDIS_URL='redis://127.0.0.1:$(cat "$dir/port")/0'"; }

running() { [ -s "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

halt() {
	if running; then
		local pid
		pid=$(cat "$dir/pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	fi
}

pause() {
	[ -e "$dir/$marker" ] || die "$dir was not made by this script; not touching it"
	halt
}

stop() {
	[ -e "$dir" ] || return 0
	[ -e "$dir/$marker" ] || die "$dir was not made by this script; not touching it"
	halt
	rm -rf "$dir" "$dir.lock"
}

start() {
	command -v redis-server >/dev/null 2>&1 || install_redis
	command -v redis-server >/dev/null 2>&1 || die "redis-server installed but not on PATH"
	if [ -e "$dir" ] && [ ! -e "$dir/$marker" ]; then die "$dir exists and was not made by this script"; fi
	mkdir -p "$dir"
	touch "$dir/$marker"
	if running && [ -s "$dir/port" ]; then url; return; fi
	local port tries=0
	# A paused server comes back on its port, so its clients reconnect.
	port=$(cat "$dir/port" 2>/dev/null || true)
	while :; do
		[ -n "$port" ] || port=$((20000 + RANDOM % 40000))
		if port_free "$port"; then
			echo "$port" >"$dir/port"
			redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" \
				--daemonize yes --pidfile "$dir/pid" --logfile "$dir/server.log" >/dev/null 2>&1 9>&- || true
			for _ in $(seq 50); do
				if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && running; then url; return; fi
				sleep 0.1
			done
		fi
		tries=$((tries + 1))
		[ $tries -lt 5 ] || { show "$dir/server.log"; die "could not start redis-server"; }
		port=
	done
}

# One run at a time per DIR.
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9

"$cmd"
