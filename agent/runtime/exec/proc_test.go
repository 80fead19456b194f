//go:build linux

package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// Fields 3 to 22 of a real stat line; the command name holds ") (".
	tail := " S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 98765 1000 10"
	cases := []struct {
		name, text string
		want       procStat
		err        bool
	}{
		{"plain", "4242 (sh)" + tail, procStat{State: 'S', PGID: 4242, UTime: 7, STime: 3, CUTime: 2, CSTime: 1, StartTime: 98765}, false},
		{"odd name", "4242 (a) (b c)" + tail, procStat{State: 'S', PGID: 4242, UTime: 7, STime: 3, CUTime: 2, CSTime: 1, StartTime: 98765}, false},
		{"no name", "4242 sh S 1", procStat{}, true},
		{"short", "4242 (sh) S 1 2", procStat{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tc.text))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestProcessStartNamesThisProcess(t *testing.T) {
	start, err := processStart(os.Getpid())
	if err != nil || start == 0 {
		t.Fatalf("start = %d, %v", start, err)
	}
	if !alive(os.Getpid(), start) {
		t.Fatal("this process is not alive")
	}
	if alive(os.Getpid(), start+1) {
		t.Fatal("a different start time was taken for this process")
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("tool", 0o755)
	write("data", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		argv string
		env  []string
		wd   string
		want string // "" for an error
	}{
		{"through container PATH", "tool", []string{"PATH=/nonexistent:" + dir}, "", filepath.Join(dir, "tool")},
		{"last PATH wins", "tool", []string{"PATH=/nonexistent", "PATH=" + dir}, "", filepath.Join(dir, "tool")},
		{"not on PATH", "tool", []string{"PATH=/nonexistent"}, "", ""},
		{"default PATH", "sh", nil, "", "/bin/sh"},
		{"not executable", "data", []string{"PATH=" + dir}, "", ""},
		{"directory", "sub", []string{"PATH=" + dir}, "", ""},
		{"absolute", filepath.Join(dir, "tool"), nil, "", filepath.Join(dir, "tool")},
		{"relative to working dir", "./tool", nil, dir, "./tool"},
		{"relative missing", "./nothing", nil, dir, ""},
		{"empty", "", nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookPath(tc.argv, tc.env, tc.wd)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("resolved to %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// /bin may be a link to /usr/bin: compare what the names open.
			if tc.name == "default PATH" {
				if !strings.HasSuffix(got, "/sh") {
					t.Fatalf("got %q", got)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
