package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// result is what one in-process run of berth produced.
type result struct {
	code           int
	stdout, stderr string
}

func runBerth(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// golden renders a run for a golden file.
func (r result) golden(args []string) string {
	return fmt.Sprintf("$ berth %s\n# exit %d\n# stdout\n%s# stderr\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
}

// stdinManifest duplicates a Deployment of testdata/validate/good and
// brings a new error, to show stdin among files.
const stdinManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: shop
spec:
  type: ExternalName
`

func TestValidateGolden(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		code  int
	}{
		{"good", []string{"validate", "-f", "testdata/validate/good"}, "", exitOK},
		{"bad", []string{"validate", "-f", "testdata/validate/bad"}, "", exitUsage},
		{"custom", []string{"validate", "-f", "testdata/validate/custom"}, "", exitUsage},
		{"files-and-stdin", []string{"validate", "-f", "testdata/validate/good/app.yaml", "-f", "-", "-f", "testdata/validate/bad/pod.json"}, stdinManifest, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBerth(t, tt.stdin, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit code = %d, want %d\nstderr: %s", r.code, tt.code, r.stderr)
			}
			for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
				if line != "" && !errorLine.MatchString(line) {
					t.Errorf("not an error line: %q", line)
				}
			}
			got := r.golden(tt.args)
			path := filepath.Join("testdata", "validate", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// errorLine is the documented shape of an error line.
var errorLine = regexp.MustCompile(`^[^:]+(:doc \d+( \(line \d+\))?)?: (\S+: )?\S.*$`)

func TestValidateExitCodes(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no -f", []string{"validate"}, exitUsage, `required flag(s) "filename" not set`},
		{"missing path", []string{"validate", "-f", "testdata/validate/nope"}, exitUsage, `the path "testdata/validate/nope" does not exist`},
		{"arguments", []string{"validate", "-f", "testdata/validate/good", "extra"}, exitUsage, "unknown command"},
		{"unknown flag", []string{"validate", "--frobnicate"}, exitUsage, "unknown flag: --frobnicate"},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate" for "berth"`},
		{"bad log format", []string{"--log-format", "xml", "validate", "-f", "testdata/validate/good"}, exitUsage, "--log-format must be text or json"},
		{"nothing to validate", []string{"validate", "-f", empty}, exitUsage, "no manifests"},
		{"json logs", []string{"-v", "--log-format", "json", "validate", "-f", "testdata/validate/good/config.json"}, exitOK, `"msg":"validating"`},
		{"text logs", []string{"--verbose", "validate", "-f", "testdata/validate/good/config.json"}, exitOK, "msg=validating"},
		{"custom resource without its CRD", []string{"validate", "-f", "testdata/validate/custom/crd.yaml", "-f", "testdata/validate/custom/certificate.yaml"},
			exitOK, "Certificate cert-manager.io/v1 not checked: no CustomResourceDefinition for it in the tree\n1 object in 2 files valid, 1 custom resource not checked"},
		{"file of any name", []string{"validate", "-f", "testdata/validate/good/README.md"}, exitUsage, "1 error in 1 of 1 file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBerth(t, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", r.code, r.stderr, tt.code, tt.stderr)
			}
		})
	}
}

func TestValidateSymlinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	write("apps/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	write("apps/nested/b.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
	write(".hidden/c.yaml", "not: [valid\n")
	write("apps/.d.yaml", "not: [valid\n")
	link("../..", "apps/nested/loop")       // a loop back to the root
	link("../../apps", "apps/nested/again") // the same directory again
	link("a.yaml", "apps/alias.yaml")       // the same file again
	link("missing.yaml", "apps/dangling.yaml")
	link("../.hidden", "apps/shown") // a dot folder under another name

	r := runBerth(t, "", "validate", "-f", dir)
	if r.code != exitUsage {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// Every object once; the dot folder read once, through the link.
	want := fmt.Sprintf("%s:doc 0 (line 1): invalid YAML: did not find expected ',' or ']'\n", filepath.Join(dir, "apps", "shown", "c.yaml"))
	if r.stdout != want || !strings.Contains(r.stderr, "1 error in 1 of 3 files") {
		t.Errorf("stdout %q\nstderr %q\nwant   %q", r.stdout, r.stderr, want)
	}
}

func TestValidateUnreadable(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("file modes do not stop this user from reading")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "secret.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: v1\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	r := runBerth(t, "", "validate", "-f", dir)
	if r.code != exitFailure || !strings.Contains(r.stdout, p+": cannot read: permission denied") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
}

func TestVersion(t *testing.T) {
	want := regexp.MustCompile(`^berth \S+ \(\S+, go[^)]+\)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runBerth(t, "", args...)
		if r.code != exitOK || !want.MatchString(r.stdout) {
			t.Errorf("berth %v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
	if r := runBerth(t, "", "version", "extra"); r.code != exitUsage {
		t.Errorf("version with an argument: exit %d", r.code)
	}
	old := version
	version, commit = "v1.2.3", "abc1234"
	defer func() { version, commit = old, "dev" }()
	if got, want := versionLine(), "berth v1.2.3 (abc1234, "+runtime.Version()+")"; got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
}
