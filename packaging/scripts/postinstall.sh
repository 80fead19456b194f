#!/bin/sh
# Make systemd see the (new) units. The services are not enabled or started:
# edit /etc/default/berth-server or berth-agent first, then
#   systemctl enable --now berth-server
set -e
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || :
fi
exit 0
