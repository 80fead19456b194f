//go:build linux

package exec

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/utils/clock"
)

// writeLogFiles writes contents as the log files of dir, oldest first.
func writeLogFiles(t *testing.T, dir string, contents []string) {
	t.Helper()
	for i, c := range contents {
		n := len(contents) - 1 - i
		if err := os.WriteFile(logPath(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTailAcrossFiles(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		tail  int64
		want  string
	}{
		{"within last file", []string{"a\nb\n", "c\nd\ne\n"}, 2, "d\ne\n"},
		{"exactly the last file", []string{"a\nb\n", "c\nd\n"}, 2, "c\nd\n"},
		{"into the older file", []string{"a\nb\n", "c\nd\n"}, 3, "b\nc\nd\n"},
		{"line split across files", []string{"a\nb", "c\nd\n"}, 2, "bc\nd\n"},
		{"no final newline", []string{"a\nb\nc"}, 2, "b\nc"},
		{"more than there is", []string{"a\n", "b\n"}, 10, "a\nb\n"},
		{"empty newest file", []string{"a\nb\n", ""}, 1, "b\n"},
		{"all", []string{"a\n", "b\n"}, 0, "a\nb\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLogFiles(t, dir, tc.files)
			var b bytes.Buffer
			if err := writeLogs(context.Background(), clock.RealClock{}, dir, tc.tail, false, nil, &b); err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Fatalf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestRotatingWriterSplitsAtTheLimit(t *testing.T) {
	dir := t.TempDir()
	w, err := newRotatingWriter(dir, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("0123456789ab")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("cd")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	want := map[int]string{0: "cd", 1: "89ab", 2: "4567"} // "0123" rotated out
	for n, text := range want {
		b, err := os.ReadFile(logPath(dir, n))
		if err != nil || string(b) != text {
			t.Errorf("file %d = %q, %v; want %q", n, b, err, text)
		}
	}
	if _, err := os.Stat(logPath(dir, 3)); err == nil {
		t.Error("kept a fourth file")
	}
}

func TestCappedBuffer(t *testing.T) {
	c := &cappedBuffer{max: 5}
	for _, s := range []string{"abc", "def", "ghi"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write = %d, %v", n, err)
		}
	}
	if got := c.buf.String(); got != "abcde" {
		t.Fatalf("kept %q", got)
	}
	if strings.Contains(c.buf.String(), "f") {
		t.Fatal("kept past the cap")
	}
}
