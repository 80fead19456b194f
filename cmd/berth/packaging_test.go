package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestUnitsDoNotRestartOnBadUsage checks that the packaged systemd units
// restart berth on failure but not on bad usage (exit 2): a wrong or
// missing flag in /etc/default/ fails the same way at every start, so
// Restart=on-failure alone would restart it every 5s for ever. The agent
// with no arguments, as /etc/default/berth-agent ships, is such a start.
func TestUnitsDoNotRestartOnBadUsage(t *testing.T) {
	if r := runBerth(t, "", "agent", "--data-dir", filepath.Join(t.TempDir(), "agent")); r.code != exitUsage {
		t.Errorf("berth agent with no --server or manifests: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	units, err := filepath.Glob(filepath.Join("..", "..", "packaging", "systemd", "*.service"))
	if err != nil || len(units) != 2 {
		t.Fatalf("units: %v %v", units, err)
	}
	for _, u := range units {
		data, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		var prevent []string
		restart := ""
		for _, line := range strings.Split(string(data), "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
			switch k {
			case "Restart":
				restart = v
			case "RestartPreventExitStatus":
				prevent = append(prevent, strings.Fields(v)...)
			}
		}
		if restart != "on-failure" {
			t.Errorf("%s: Restart=%s, want on-failure", u, restart)
		}
		if !slices.Contains(prevent, strconv.Itoa(exitUsage)) {
			t.Errorf("%s: RestartPreventExitStatus=%s lacks %d, bad usage", u, strings.Join(prevent, " "), exitUsage)
		}
	}
}

// TestCompletionListed checks that `berth completion`, whose output the
// packages install and which a `go install` user runs, is in the help.
func TestCompletionListed(t *testing.T) {
	r := runBerth(t, "", "--help")
	if r.code != exitOK || !strings.Contains(r.stdout, "\n  completion ") {
		t.Errorf("berth --help does not list completion: exit %d\n%s", r.code, r.stdout)
	}
	r = runBerth(t, "", "completion", "bash")
	if r.code != exitOK || !strings.Contains(r.stdout, "bash completion") {
		t.Errorf("berth completion bash: exit %d\n%.200s%s", r.code, r.stdout, r.stderr)
	}
}

// TestManPages checks that `berth man`, which the packages' manual pages
// come from, writes one dated page per command a user can run, without
// the generator's footer and with the help's text whole, and that it refuses to run without a directory.
func TestManPages(t *testing.T) {
	if r := runBerth(t, "", "man"); r.code != exitUsage {
		t.Errorf("berth man without --dir: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000") // 2023-11-14
	dir := filepath.Join(t.TempDir(), "man1")
	if r := runBerth(t, "", "man", "--dir", dir); r.code != exitOK {
		t.Fatalf("berth man: exit %d\n%s", r.code, r.stderr)
	}

	root, _ := newRootCommand(strings.NewReader(""), io.Discard, io.Discard)
	root.InitDefaultCompletionCmd() // cobra adds it when the command runs
	var want []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		want = append(want, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("pages %v, want one per command: %v", got, want)
	}
	if slices.Contains(got, "berth-man.1") {
		t.Errorf("the hidden man command has a page of its own")
	}

	page, err := os.ReadFile(filepath.Join(dir, "berth-get.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`.TH "BERTH" "1" "Nov 2023" "berth dev" "berth Manual"`, "berth-get - List or show objects", "--output",
		// A placeholder in angle brackets, which Markdown would drop.
		"else <data dir>/admin.kubeconfig", `\fBberth(1)\fP`} {
		if !strings.Contains(string(page), s) {
			t.Errorf("berth-get.1 lacks %q:\n%.600s", s, page)
		}
	}
	if strings.Contains(string(page), "Auto generated") {
		t.Errorf("berth-get.1 carries the generator's footer")
	}
}
