package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServerSync10000 measures the whole server on a directory source
// of 10,000 manifests (2,500 each of Deployments with no replicas,
// Services, ConfigMaps and Secrets, one file each, half in flow style):
//
//   - sync-s: from the server listening to the revision applied (read,
//     decode, validate, one transaction), from its log;
//   - peak-MiB: the server's peak RSS (VmHWM) 5 s after, once the
//     controllers have answered the sync (2,500 ReplicaSets, 2,500
//     Endpoints);
//   - edit-p50-ms, edit-max-ms: eight one-file edits, each from the source
//     revision to the revision applied (the applier's share);
//   - peak-after-edits-MiB: VmHWM after them.
//
// Command: go test -run XXX -bench ServerSync10000 -benchtime 1x ./test/e2e/
func BenchmarkServerSync10000(b *testing.B) {
	dir := b.TempDir()
	writeManifests(b, dir, 2500)
	for range b.N {
		s := startServer(b, "--source", "name=big,"+dir, "-v")
		pid := s.cmd.Process.Pid
		waitFor(b, 60*time.Second, "the first revision applied", func() error {
			if n := strings.Count(s.Output(), `msg="applied revision"`); n == 0 {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		listening := logTimes(b, s.Output(), `msg="berth server listening"`)
		applied := logTimes(b, s.Output(), `msg="applied revision"`)
		b.ReportMetric(applied[0].Sub(listening[0]).Seconds(), "sync-s")
		time.Sleep(5 * time.Second)
		hwm, err := procStatus(pid, "VmHWM")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(hwm)/(1<<20), "peak-MiB")

		var edits []float64
		for e := 1; e <= 8; e++ {
			before := strings.Count(s.Output(), `msg="applied revision"`)
			f := filepath.Join(dir, fmt.Sprintf("c%d.yaml", e))
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			edited := strings.Replace(string(data), `key: "`, `key: "edited `, 1)
			if edited == string(data) {
				b.Fatalf("%s: nothing to edit", f)
			}
			if err := os.WriteFile(f, []byte(edited), 0o644); err != nil {
				b.Fatal(err)
			}
			waitFor(b, 30*time.Second, "the edit applied", func() error {
				if strings.Count(s.Output(), `msg="applied revision"`) == before {
					return fmt.Errorf("not yet")
				}
				return nil
			})
			revs := logTimes(b, s.Output(), `msg="source revision"`)
			applied := logTimes(b, s.Output(), `msg="applied revision"`)
			edits = append(edits, float64(applied[len(applied)-1].Sub(revs[len(revs)-1]).Microseconds())/1000)
			time.Sleep(2 * time.Second)
		}
		slices.Sort(edits)
		b.ReportMetric(edits[len(edits)/2], "edit-p50-ms")
		b.ReportMetric(edits[len(edits)-1], "edit-max-ms")
		if hwm, err = procStatus(pid, "VmHWM"); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(hwm)/(1<<20), "peak-after-edits-MiB")
		s.stop(syscall.SIGTERM, 10*time.Second)
	}
}

// writeManifests writes n each of Deployments, Services, ConfigMaps and
// Secrets into dir, one file each.
func writeManifests(t testing.TB, dir string, n int) {
	t.Helper()
	for i := range n {
		files := map[string]string{
			fmt.Sprintf("d%d.yaml", i): fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: d%[1]d
  labels: {app: d%[1]d, tier: web}
spec:
  replicas: 0
  selector:
    matchLabels: {app: d%[1]d}
  template:
    metadata:
      labels: {app: d%[1]d}
    spec:
      containers:
      - name: web
        image: example/web:%[1]d
        command: [sleep, "1000"]
        ports:
        - containerPort: 8080
        env:
        - {name: A, value: "x"}
`, i),
			fmt.Sprintf("s%d.yaml", i): fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: s%[1]d
spec:
  selector: {app: d%[1]d}
  ports: [{name: http, port: 80, targetPort: 8080}]
`, i),
			fmt.Sprintf("c%d.yaml", i): fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: c%[1]d
data:
  key: "value %[1]d"
  other: "some more text for config %[1]d"
`, i),
			fmt.Sprintf("x%d.yaml", i): fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: x%[1]d
stringData:
  password: "secret-%[1]d"
`, i),
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

var logTime = regexp.MustCompile(`time=(\S+)`)

// logTimes returns the times of the log lines that contain msg.
func logTimes(t testing.TB, out, msg string) []time.Time {
	t.Helper()
	var times []time.Time
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, msg) {
			continue
		}
		m := logTime.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no time in %q", line)
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, ts)
	}
	if len(times) == 0 {
		t.Fatalf("no log line %s", msg)
	}
	return times
}
