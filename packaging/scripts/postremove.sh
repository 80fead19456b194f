#!/bin/sh
# Tell systemd the units are gone. The data dirs /var/lib/berth and
# /var/lib/berth-agent are kept: they hold the cluster's state.
set -e
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	systemctl daemon-reload || :
fi
exit 0
