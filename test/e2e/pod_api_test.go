package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// waitPodSucceeded waits until the pod has run to a clean end and returns
// its logs; a pod that fails ends the test with them.
func waitPodSucceeded(t *testing.T, s *server, name string) string {
	t.Helper()
	var logs string
	waitFor(t, 90*time.Second, "pod "+name+" Succeeded", func() error {
		obj, err := s.getJSON(t, "pod", name)
		if err != nil {
			return err
		}
		phase, _ := field(obj, "status.phase").(string)
		switch phase {
		case "Succeeded":
			logs, _, _ = s.berth(t, "logs", name)
			return nil
		case "Failed":
			out, _, _ := s.berth(t, "logs", name)
			t.Fatalf("pod %s failed: %v\n%s", name, field(obj, "status"), out)
		}
		return fmt.Errorf("phase %q, status %v", phase, containerStatus(obj))
	})
	return logs
}

// apiClientPod is a pod that lists the pods of its namespace with kubectl,
// told only what a pod is told: the API server's address in
// KUBERNETES_SERVICE_HOST and _PORT, its token and the CA beside it.
func apiClientPod(name, kubectl, securityContext string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: bitnami/kubectl
    command:
    - /bin/sh
    - -c
    - |
      export HOME="$BERTH_VOLUME_SCRATCH"
      dir=$(dirname "$BERTH_SERVICEACCOUNT_TOKEN_FILE")
      echo "uid $(id -u)"
      echo written > "$BERTH_VOLUME_SCRATCH/note" && echo "note $(cat "$BERTH_VOLUME_SCRATCH/note")"
      exec %s --cache-dir "$BERTH_VOLUME_SCRATCH/cache" \
        --server "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT" \
        --token "$(cat "$BERTH_SERVICEACCOUNT_TOKEN_FILE")" \
        --certificate-authority "$dir/ca.crt" \
        get pods -n "$(cat "$dir/namespace")" -o name
%s  volumes:
  - name: scratch
    emptyDir: {}
`, name, kubectl, securityContext)
}

// TestPodsReachTheAPI: a pod finds the API server from its environment
// and authenticates with its token, trusting the ca.crt beside it, with
// kubectl and nothing else; and a pod that runs as another user
// (runAsUser: 65534) does the same and writes its emptyDir.
func TestPodsReachTheAPI(t *testing.T) {
	kubectl := testtool.Need(t, "kubectl")
	// The agent's data dir is made below the test's temporary directory:
	// other users must be able to pass through it, as through
	// /var/lib, to reach their pod's files.
	if err := os.Chmod(filepath.Dir(t.TempDir()), 0o711); err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	a := startAgent(t, s, "api-node", "127.0.0.40")
	// The pods list pods with the default service account's token, which
	// a binding must let read, as in Kubernetes.
	s.grantView(t, "default", "default")

	t.Run("as the agent", func(t *testing.T) {
		s.applyText(t, apiClientPod("api-client", kubectl, ""))
		logs := waitPodSucceeded(t, s, "api-client")
		if !strings.Contains(logs, "pod/api-client") {
			t.Fatalf("kubectl in the pod did not list it:\n%s\nagent:\n%s", logs, a.Output())
		}
	})

	t.Run("as another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("running a container as another user needs an agent running as root")
		}
		sc := "    securityContext:\n      runAsUser: 65534\n"
		s.applyText(t, apiClientPod("api-client-nobody", kubectl, sc))
		logs := waitPodSucceeded(t, s, "api-client-nobody")
		for _, want := range []string{"uid 65534", "note written", "pod/api-client-nobody"} {
			if !strings.Contains(logs, want) {
				t.Fatalf("logs lack %q:\n%s\nagent:\n%s", want, logs, a.Output())
			}
		}
	})
}
