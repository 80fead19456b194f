package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestUnitsRestartCrashesButNotAFailingStart checks the packaged systemd
// units' restart policy. A crash restarts berth, whatever its exit code: a
// Go panic exits 2, as bad usage does, so exit 2 must not be exempt from
// Restart=on-failure. A start that fails every time (a flag wrong or
// missing in /etc/default/, as the agent with no arguments, the way
// /etc/default/berth-agent ships; a store that cannot be opened) must not
// restart every RestartSec for ever: the start rate limit stops it, so the
// burst of starts, RestartSec apart, must fit within the interval.
func TestUnitsRestartCrashesButNotAFailingStart(t *testing.T) {
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
		keys := unitKeys(string(data))
		if r := keys["Service.Restart"]; r != "on-failure" {
			t.Errorf("%s: Restart=%s, want on-failure", u, r)
		}
		if prevent := strings.Fields(keys["Service.RestartPreventExitStatus"]); slices.Contains(prevent, strconv.Itoa(exitUsage)) {
			t.Errorf("%s: RestartPreventExitStatus=%s: a panic exits %d and would not restart", u, strings.Join(prevent, " "), exitUsage)
		}
		restartSec, err := systemdSpan(keys["Service.RestartSec"])
		if err != nil || restartSec <= 0 {
			t.Errorf("%s: RestartSec=%q: %v", u, keys["Service.RestartSec"], err)
			continue
		}
		interval, err := systemdSpan(keys["Unit.StartLimitIntervalSec"])
		if err != nil || interval <= 0 {
			t.Errorf("%s: [Unit] StartLimitIntervalSec=%q, want a time span: %v", u, keys["Unit.StartLimitIntervalSec"], err)
			continue
		}
		burst, err := strconv.Atoi(keys["Unit.StartLimitBurst"])
		if err != nil || burst < 2 {
			t.Errorf("%s: [Unit] StartLimitBurst=%q, want a few tries: %v", u, keys["Unit.StartLimitBurst"], err)
			continue
		}
		if time.Duration(burst)*restartSec >= interval {
			t.Errorf("%s: %d starts %v apart do not fit in StartLimitIntervalSec=%v: a start that always fails restarts for ever", u, burst, restartSec, interval)
		}
	}
}

// unitKeys reads a systemd unit file into "Section.Key" → value (the
// last one set).
func unitKeys(text string) map[string]string {
	keys := map[string]string{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "", strings.HasPrefix(line, "#"), strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, _ := strings.Cut(line, "=")
			keys[section+"."+strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return keys
}

// systemdSpan parses the time spans the units use: "5s", "2min", or a
// bare number of seconds.
func systemdSpan(v string) (time.Duration, error) {
	if _, err := strconv.Atoi(v); err == nil {
		v += "s"
	}
	return time.ParseDuration(strings.Replace(v, "min", "m", 1))
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

// TestManPagesKeepHelpText checks that every page says what --help says:
// each word of the command's description and each flag's default, which
// the generator reads as Markdown, where a default such as
// memory.available<100Mi would lose its "<100Mi" to HTML and a name such
// as KUBERNETES_SERVICE_PORT its underscores to emphasis.
func TestManPagesKeepHelpText(t *testing.T) {
	dir := t.TempDir()
	if r := runBerth(t, "", "man", "--dir", dir); r.code != exitOK {
		t.Fatalf("berth man: exit %d\n%s", r.code, r.stderr)
	}
	// The page's text without troff's font changes and escapes.
	unroff := strings.NewReplacer(`\fB`, "", `\fI`, "", `\fP`, "", `\fR`, "", `\&`, "", `\\`, `\`)
	root, _ := newRootCommand(strings.NewReader(""), io.Discard, io.Discard)
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			return
		}
		page := unroff.Replace(string(data))
		words := map[string]bool{}
		for _, w := range strings.Fields(page) {
			words[w] = true
		}
		for _, w := range strings.Fields(c.Long) {
			// cobra's completion help marks its headings as Markdown
			// does, and they are headings in the page.
			if !words[w] && strings.Trim(w, "#") != "" {
				t.Errorf("%s lacks %q of the description", name, w)
			}
		}
		check := func(f *pflag.Flag) {
			if f.DefValue != "" && !strings.Contains(page, f.DefValue) {
				t.Errorf("%s: --%s: the default %q is not in the page", name, f.Name, f.DefValue)
			}
		}
		c.NonInheritedFlags().VisitAll(check)
		c.InheritedFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
