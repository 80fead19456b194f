#!/bin/sh
# Make systemd see the (new) units. A fresh install enables and starts
# nothing: edit /etc/default/berth-server or berth-agent first, then
#   systemctl enable --now berth-server
# An upgrade restarts the units that are running, so that they run the new
# binary (try-restart leaves stopped ones alone). Pods keep running across
# the restart (KillMode=process) and berth takes them back.
set -e
upgrade=
case "$1" in
configure) [ -z "${2:-}" ] || upgrade=1 ;; # deb: configure <old version>
1) ;;                                       # rpm: first install
[0-9]*) upgrade=1 ;;                        # rpm: versions installed, 2 on upgrade
esac
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || :
	if [ -n "$upgrade" ]; then
		systemctl try-restart berth-server.service berth-agent.service || :
	fi
fi
exit 0
