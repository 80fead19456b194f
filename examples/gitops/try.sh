#!/bin/sh
# try.sh: git push deploys. Makes a bare repository holding examples/hello,
# starts `berth server` with it as a git source and a webhook secret,
# installs a post-receive hook that calls the server's signed webhook, then
# pushes a change and shows it applied at once.
#
# Needs: git, openssl, curl, and berth (built here from the repository
# when BERTH is not set). Everything goes to a temporary directory.
#
# The server runs with --agent=false: the story is the Deployment's spec
# changing at the push, which needs no pod, so nothing runs beside the
# server, and Ctrl-C or the end, which stop it, leave nothing behind. Its
# four listeners default to addresses of their own, apart from a server
# started as the README shows (:6443, :10053, 127.0.0.1:8081 and
# 127.0.0.1:10055).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
W=${W:-$(mktemp -d)}
LISTEN=${LISTEN:-127.0.0.1:16443}
DNS=${DNS:-127.0.0.1:10153}
DNS_HEALTH=${DNS_HEALTH:-127.0.0.1:18081}
DNS_METRICS=${DNS_METRICS:-127.0.0.1:10155}
if [ -z "${BERTH:-}" ]; then
	(cd "$repo" && go build -o "$W/berth" ./cmd/berth)
	BERTH=$W/berth
fi
berth() { "$BERTH" --kubeconfig "$W/data/admin.kubeconfig" "$@"; }
say() { printf '\n== %s\n' "$*"; }

say "a bare repository, $W/fleet.git, holding examples/hello and fleet/"
git init -q --bare "$W/fleet.git"
git clone -q "$W/fleet.git" "$W/work" 2>/dev/null
cp "$repo"/examples/hello/*.yaml "$here"/fleet/*.yaml "$W/work/"
git -C "$W/work" add -A
git -C "$W/work" -c user.name=try -c user.email=try@example.com commit -qm "hello"
git -C "$W/work" push -q origin HEAD

say "the webhook secret and the post-receive hook"
openssl rand -hex 32 >"$W/webhook-secret"
# berth has no command that signs a webhook; sh, openssl and curl do it:
# X-Hub-Signature-256 is sha256=<hex HMAC-SHA256 of the body>, as GitHub's.
cat >"$W/fleet.git/hooks/post-receive" <<HOOK
#!/bin/sh
while read -r old new ref; do
	body=\$(printf '{"ref":"%s","before":"%s","after":"%s"}' "\$ref" "\$old" "\$new")
	sig=\$(printf '%s' "\$body" | openssl dgst -sha256 -hmac "\$(cat '$W/webhook-secret')" | sed 's/^.*= *//')
	curl -sS --cacert '$W/data/tls/ca.crt' -X POST \\
		-H 'Content-Type: application/json' -H "X-Hub-Signature-256: sha256=\$sig" \\
		--data-binary "\$body" -o /dev/null -w 'webhook: %{http_code}\n' \\
		'https://$LISTEN/hooks/fleet' || echo 'webhook: the server did not answer'
done
HOOK
chmod +x "$W/fleet.git/hooks/post-receive"

say "berth server with the repository as its source (polling only hourly)"
"$BERTH" server --data-dir "$W/data" --agent=false --listen "$LISTEN" \
	--dns-listen "$DNS" --dns-health-listen "$DNS_HEALTH" --dns-metrics-listen "$DNS_METRICS" \
	--source "git+file://$W/fleet.git?interval=1h" \
	--webhook-secret-file "$W/webhook-secret" 2>"$W/server.log" &
server=$!
# The server is all this script starts: stopping it stops everything.
trap 'kill $server 2>/dev/null || :; wait $server 2>/dev/null || :; echo "server stopped; the files are in $W"' EXIT
trap 'exit 130' INT TERM

# wait_rev REV: until the source has applied the commit REV.
wait_rev() {
	short=$(printf %.12s "$1")
	i=0
	until berth get sources 2>/dev/null | grep -q "$short.*True"; do
		i=$((i + 1))
		if [ $i -gt 150 ]; then
			echo "timed out; the server log is $W/server.log" >&2
			exit 1
		fi
		sleep 0.2
	done
	berth get sources
}
wait_rev "$(git -C "$W/work" rev-parse HEAD)"
berth get deploy hello -o yaml | sed '/^status:/,$d' | grep -E '^  replicas:|hello from'

say "git push: scale to 3 and a new text; the hook makes it live now"
sed -i.bak -e 's/replicas: [0-9]*/replicas: 3/' -e 's/hello from/hi from/' "$W/work/hello.yaml"
sed -i.bak -e 's/greeting: hello/greeting: hi/' "$W/work/settings.yaml"
rm -f "$W/work"/*.bak
git -C "$W/work" -c user.name=try -c user.email=try@example.com commit -qam "scale to 3, new text"
start=$(date +%s)
git -C "$W/work" push -q origin HEAD 2>&1 | sed -e 's/^remote: //' -e 's/ *$//'
wait_rev "$(git -C "$W/work" rev-parse HEAD)"
echo "applied $(($(date +%s) - start))s after the push (the poll interval is 1h)"
berth get deploy hello -o yaml | sed '/^status:/,$d' | grep -E '^  replicas:|hi from'
