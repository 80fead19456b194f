#!/bin/sh
# Stop and disable the services on removal, not on upgrade (deb passes
# "upgrade", rpm passes 1 when a version stays installed). Stopping berth
# leaves its pods running (KillMode=process), so that a restart takes them
# back; on removal nothing will, so say how to stop them.
set -e
case "$1" in
upgrade | 1) exit 0 ;;
esac
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	used=
	for unit in berth-agent.service berth-server.service; do
		if systemctl is-active --quiet "$unit" || systemctl is-enabled --quiet "$unit"; then
			used=1
		fi
		systemctl disable --now "$unit" >/dev/null 2>&1 || :
	done
	systemctl daemon-reload || :
	if [ -n "$used" ]; then
		cat >&2 <<'NOTE'
berth: stopped. Pods that berth ran on this machine and had not stopped
keep running: stopping berth leaves them for its next start to take back,
and once berth is removed none will come. To have berth stop them, drain
the node while berth runs, then remove the package (kubectl drain NODE
--ignore-daemonsets --force); otherwise end their processes yourself (on
cgroup v2 each container's are in a cgroup under /sys/fs/cgroup/berth/).
NOTE
	fi
fi
exit 0
