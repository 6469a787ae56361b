#!/usr/bin/env bash
# Runs inside the Debian bookworm test container (systemd as PID 1) that
# scripts/deb-test.sh starts: one phase per call.
#   install DEB      fresh install: user, directories, files, unit, rating, service, chat
#   upgrade DEB VER  upgrade: conffile edits kept, service restarted, data and key kept
#   purge            remove keeps data and configuration; purge deletes them
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
phase=$1
fail() { echo "FAIL: $*" >&2; journalctl -u sovereign --no-pager -n 40 >&2 || true; exit 1; }
ok() { echo "  ok: $*"; }

http() { # http METHOD PATH [BODY] → body, then the status on the last line
	local key
	key=$(sed -n 's/^SOVEREIGN_BOOTSTRAP_KEY=//p' /root/bootstrap-key.saved)
	if [ -n "${3:-}" ]; then
		curl -s -w '\n%{http_code}' -X "$1" "http://127.0.0.1:8080$2" -H "Authorization: Bearer $key" \
			-H 'Content-Type: application/json' -d "$3"
	else
		curl -s -w '\n%{http_code}' -X "$1" "http://127.0.0.1:8080$2" -H "Authorization: Bearer $key"
	fi
}

wait_ready() {
	for _ in $(seq 1 100); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/readyz)" = 200 ] && { ok "/readyz 200"; return; }
		sleep 0.2
	done
	fail "/readyz not 200 after 20s"
}

chat() {
	local out code
	# The catalog re-reads the models directory on a miss at most once a
	# second: a model pulled just now may take that long to appear.
	for _ in $(seq 1 20); do
		out=$(http POST /v1/chat/completions '{"model":"tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":8,"temperature":0}')
		code=$(tail -n1 <<<"$out")
		[ "$code" = 404 ] || break
		sleep 0.3
	done
	[ "$code" = 200 ] || fail "chat: HTTP $code: $out"
	grep -q '"finish_reason"' <<<"$out" || fail "chat: no choice in $out"
	ok "chat answered under the hardened unit: $(head -n1 <<<"$out" | grep -o '"content":"[^"]*"')"
}

mainpid() { systemctl show -p MainPID --value sovereign; }

rating() {
	local line
	line=$(systemd-analyze security sovereign.service 2>&1 | grep 'Overall exposure level') || fail "systemd-analyze security gave no rating"
	echo "  $line"
	grep -Eq ': [0-4]\.[0-9] (OK|SAFE|PERFECT)' <<<"$line" || fail "rating is not OK or better"
	systemd-analyze security --threshold=49 sovereign.service >/dev/null || fail "exposure above 4.9"
	ok "systemd-analyze security (live unit): OK or better"
}

case $phase in
install)
	apt-get install -y -q "$2" >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get install"; }
	grep -q 'first admin API key is in /etc/sovereign/bootstrap-key' /tmp/apt.log || fail "postinst did not say where the admin key is"
	ok "apt-get install $(basename "$2") (dependencies from the local apt cache, no network)"
	IFS=: read -r _ _ uid _ _ home shell < <(getent passwd sovereign) || fail "no sovereign user"
	[ "$uid" -lt 1000 ] && [ "$shell" = /usr/sbin/nologin ] && [ "$home" = /var/lib/sovereign ] || fail "user: uid $uid home $home shell $shell"
	ok "system user sovereign (uid $uid, $shell)"
	[ "$(stat -c '%U:%G %a' /var/lib/sovereign)" = "sovereign:sovereign 750" ] || fail "/var/lib/sovereign: $(stat -c '%U:%G %a' /var/lib/sovereign)"
	[ "$(stat -c '%U:%G %a' /etc/sovereign/sovereign.yaml)" = "root:sovereign 640" ] || fail "sovereign.yaml: $(stat -c '%U:%G %a' /etc/sovereign/sovereign.yaml)"
	[ "$(stat -c '%U:%G %a' /etc/default/sovereign)" = "root:root 600" ] || fail "/etc/default/sovereign mode"
	[ "$(stat -c '%U:%G %a' /etc/sovereign/bootstrap-key)" = "root:root 600" ] || fail "bootstrap-key mode"
	grep -Eq '^SOVEREIGN_BOOTSTRAP_KEY=sk-sov-[0-9a-f]{48}$' /etc/sovereign/bootstrap-key || fail "bootstrap-key content"
	cp /etc/sovereign/bootstrap-key /root/bootstrap-key.saved
	ok "directories and files: data 0750, yaml root:sovereign 0640, env file and key root 0600"
	conff=$(dpkg-query -W -f='${Conffiles}' sovereign)
	grep -q '/etc/sovereign/sovereign.yaml' <<<"$conff" && grep -q '/etc/default/sovereign' <<<"$conff" || fail "conffiles: $conff"
	ok "conffiles: /etc/sovereign/sovereign.yaml /etc/default/sovereign"
	[ "$(systemctl is-enabled sovereign)" = enabled ] || fail "unit not enabled"
	[ "$(systemctl is-active sovereign)" = active ] || fail "unit not active"
	ok "unit enabled and active"
	rating
	pid=$(mainpid)
	[ "$(awk '/^Uid:/{print $2}' /proc/"$pid"/status)" = "$uid" ] || fail "service not running as sovereign"
	ok "server runs as uid $uid"
	wait_ready
	journalctl -u sovereign --no-pager | grep -c 'Admin API key created from SOVEREIGN_BOOTSTRAP_KEY' >/dev/null || fail "journal: admin key not created from the bootstrap key"
	journalctl -u sovereign --no-pager | grep -c 'The first admin API key is in /etc/sovereign/bootstrap-key' >/dev/null || fail "journal does not say where the key is"
	! journalctl --no-pager | grep -c 'sk-sov-' >/dev/null || fail "a secret reached the journal"
	ok "journal says where the admin key is, and holds no secret"
	# A tiny chat model in the data directory, installed as the service user.
	runuser -u sovereign -- sovereign models pull /work/tiny.gguf --id tiny --models-dir /var/lib/sovereign/models >/dev/null 2>&1
	chat
	# A second admin key from the command line, as docs/debian.md shows it.
	runuser -u sovereign -- env SOVEREIGN_DATA_DIR=/var/lib/sovereign SOVEREIGN_CONFIG=/etc/sovereign/sovereign.yaml \
		sovereign keys create --scopes admin --name ops 2>&1 | grep -c 'sk-sov-' >/dev/null || fail "keys create as the sovereign user"
	ok "sovereign keys create (as the sovereign user, on the service's database)"
	# Local edits the upgrade must keep.
	echo '# local edit kept across upgrades' >>/etc/sovereign/sovereign.yaml
	echo 'SOVEREIGN_LOG_LEVEL=debug' >>/etc/default/sovereign
	mainpid >/tmp/pid.before
	;;
upgrade)
	apt-get install -y -q "$2" >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get install (upgrade)"; }
	[ "$(dpkg-query -W -f='${Version}' sovereign)" = "$3" ] || fail "version after upgrade: $(dpkg-query -W -f='${Version}' sovereign)"
	ok "upgraded to $3"
	grep -q '# local edit kept across upgrades' /etc/sovereign/sovereign.yaml || fail "sovereign.yaml edit lost"
	grep -q '^SOVEREIGN_LOG_LEVEL=debug' /etc/default/sovereign || fail "/etc/default/sovereign edit lost"
	[ "$(stat -c '%U:%G %a' /etc/sovereign/sovereign.yaml)" = "root:sovereign 640" ] || fail "sovereign.yaml mode after upgrade"
	ok "conffile edits kept"
	cmp -s /etc/sovereign/bootstrap-key /root/bootstrap-key.saved || fail "bootstrap key changed on upgrade"
	[ "$(systemctl is-active sovereign)" = active ] || fail "not active after upgrade"
	before=$(cat /tmp/pid.before); after=$(mainpid)
	[ "$before" != "$after" ] || fail "service not restarted (MainPID $after)"
	ok "service restarted (MainPID $before → $after)"
	wait_ready
	journalctl -u sovereign --no-pager -n 200 | grep -c 'API keys: use an existing key' >/dev/null || fail "second start did not reuse the store"
	[ -e /var/lib/sovereign/models/tiny/model.gguf ] || fail "model lost on upgrade"
	chat
	ok "data and admin key kept across the upgrade"
	;;
purge)
	apt-get remove -y -q sovereign >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get remove"; }
	[ "$(systemctl is-active sovereign || true)" != active ] || fail "still active after remove"
	[ -e /var/lib/sovereign/sovereign.db ] && [ -e /etc/sovereign/sovereign.yaml ] && [ -e /etc/sovereign/bootstrap-key ] || fail "remove deleted data or configuration"
	[ ! -e /usr/bin/sovereign ] || fail "binary left after remove"
	journalctl -u sovereign --no-pager | grep -c 'shutting down: finishing in-flight requests' >/dev/null || fail "stop was not a graceful SIGTERM"
	ok "remove: service stopped gracefully (SIGTERM), binary gone, data and configuration kept"
	apt-get purge -y -q sovereign >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get purge"; }
	[ ! -e /var/lib/sovereign ] || fail "/var/lib/sovereign left after purge"
	[ ! -e /etc/sovereign ] || fail "/etc/sovereign left after purge: $(ls -A /etc/sovereign)"
	[ ! -e /etc/default/sovereign ] || fail "/etc/default/sovereign left after purge"
	dpkg-query -W sovereign >/dev/null 2>&1 && [ "$(dpkg-query -W -f='${Status}' sovereign)" != "unknown ok not-installed" ] && fail "package still known: $(dpkg-query -W -f='${Status}' sovereign)"
	getent passwd sovereign >/dev/null || fail "user removed (documented to stay)"
	ok "purge: data directory, configuration and generated key deleted; system user kept (documented)"
	;;
*) fail "unknown phase $phase" ;;
esac
