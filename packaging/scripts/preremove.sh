#!/bin/sh
# Stop and disable the services on removal, not on upgrade (deb passes
# "upgrade", rpm passes 1 when a version stays installed).
set -e
case "$1" in
upgrade | 1) exit 0 ;;
esac
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	for unit in berth-agent.service berth-server.service; do
		systemctl disable --now "$unit" >/dev/null 2>&1 || :
	done
	systemctl daemon-reload || :
fi
exit 0
