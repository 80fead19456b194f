//go:build linux

package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/testtool"
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
			if err := writeLogs(context.Background(), clock.RealClock{}, dir, runtime.LogOptions{TailLines: tc.tail}, nil, &b); err != nil {
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
	w, err := newRotatingWriter(dir, 4, 3, time.Now)
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

// smallLogs is a writer of three log files of 16 bytes in dir, on a fake
// clock.
func smallLogs(t *testing.T, dir string) (*rotatingWriter, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	w, err := newRotatingWriter(dir, 16, 3, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	return w, clk
}

// TestLogTimes: the writer records when each write came (writes within a
// millisecond sharing one record), across rotation; the reader puts each
// line's time in front of it, leaves out the lines before a since time,
// combines both with a tail, and refuses both for a log that has no
// times.
func TestLogTimes(t *testing.T) {
	dir := t.TempDir()
	w, clk := smallLogs(t, dir)
	write := func(s string) {
		t.Helper()
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("one\n")
	clk.Step(100 * time.Microsecond) // within the resolution: same time
	write("two\n")
	clk.Step(time.Second)
	write("thr")
	clk.Step(time.Second)
	write("ee\nfour\n") // finishes the line begun a second ago
	clk.Step(time.Second)
	write("five\nsix\n") // crosses into a new file at 16 bytes
	w.Close()
	if _, err := os.Stat(logPath(dir, 1)); err != nil {
		t.Fatalf("no rotation happened: %v", err)
	}

	read := func(opts runtime.LogOptions) (string, error) {
		var b bytes.Buffer
		err := writeLogs(context.Background(), clock.RealClock{}, dir, opts, nil, &b)
		return b.String(), err
	}
	t0 := "2026-11-30T12:00:00Z "
	t1 := "2026-11-30T12:00:01.0001Z "
	t3 := "2026-11-30T12:00:03.0001Z "
	got, err := read(runtime.LogOptions{Timestamps: true})
	want := t0 + "one\n" + t0 + "two\n" + t1 + "three\n" + "2026-11-30T12:00:02.0001Z four\n" + t3 + "five\n" + t3 + "six\n"
	if err != nil || got != want {
		t.Fatalf("timestamps:\n%s%v\nwant\n%s", got, err, want)
	}
	since := time.Date(2026, 11, 30, 12, 0, 2, 0, time.UTC)
	if got, err := read(runtime.LogOptions{Since: since}); err != nil || got != "four\nfive\nsix\n" {
		t.Errorf("since: %q, %v", got, err)
	}
	if got, err := read(runtime.LogOptions{Since: since, TailLines: 4, Timestamps: true}); err != nil || got != "2026-11-30T12:00:02.0001Z four\n"+t3+"five\n"+t3+"six\n" {
		t.Errorf("since with a tail of 4: %q, %v", got, err)
	}
	if got, err := read(runtime.LogOptions{TailLines: 2}); err != nil || got != "five\nsix\n" {
		t.Errorf("plain tail: %q, %v", got, err)
	}

	old := t.TempDir()
	writeLogFiles(t, old, []string{"a\nb\n"})
	var b bytes.Buffer
	if err := writeLogs(context.Background(), clock.RealClock{}, old, runtime.LogOptions{Timestamps: true}, nil, &b); !errors.Is(err, runtime.ErrNoTimes) {
		t.Errorf("a log without times: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := writeLogs(context.Background(), clock.RealClock{}, old, runtime.LogOptions{}, nil, &b); err != nil || b.String() != "a\nb\n" {
		t.Errorf("a log without times, read plainly: %q, %v", b.String(), err)
	}
}

// TestLogsFollowHoldsOnlyItsFile: a follower that starts on several
// rotated files closes each, and its times, once it has read it or its
// tail starts past it, so that the ones rotation then removes do not keep
// their space while the follow lasts. The lines keep their times across
// the rotations.
func TestLogsFollowHoldsOnlyItsFile(t *testing.T) {
	cases := []struct {
		name string
		tail int64
		from int // the first line written before the follow that it reads
	}{
		{"all", 0, 0},
		{"a tail in the newest file", 5, 45},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
			// burst writes lines [from, to) in files of 100 bytes; its
			// writer is closed after, so the follower's are the only log
			// files open here.
			burst := func(from, to int) {
				t.Helper()
				w, err := newRotatingWriter(dir, 100, logFiles, clk.Now)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.WriteString(w, numbered(from, to)); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			burst(0, 50) // five full files
			var out testtool.Buffer
			exited := make(chan struct{})
			done := make(chan error, 1)
			opts := runtime.LogOptions{Follow: true, Timestamps: true, TailLines: tc.tail}
			go func() { done <- writeLogs(context.Background(), clk, dir, opts, exited, &out) }()
			want := strings.ReplaceAll(numbered(tc.from, 50), "line", "2026-11-30T12:00:00Z line")
			testtool.WaitFor(t, waitLong, "the files written before the follow", func() error {
				if got := out.String(); got != want {
					return fmt.Errorf("followed %d bytes, want %d", len(got), len(want))
				}
				return nil
			})
			if n := openLogFiles(t); n != 2 {
				t.Errorf("having read the files there were, the follower holds %d log files open, want the newest and its times", n)
			}

			// Less than followPeriod: the follower reads only after the
			// burst.
			clk.Step(followPeriod / 2)
			burst(50, 100) // rotates every file the follower started on away
			want += strings.ReplaceAll(numbered(50, 100), "line", "2026-11-30T12:00:00.05Z line")
			testtool.WaitFor(t, waitLong, "the files rotation wrote", func() error {
				if clk.HasWaiters() {
					clk.Step(followPeriod)
				}
				if got := out.String(); got != want {
					return fmt.Errorf("followed %d bytes, want %d", len(got), len(want))
				}
				return nil
			})
			if n := openLogFiles(t); n != 2 {
				t.Errorf("after rotation the follower holds %d log files open, want the newest and its times", n)
			}
			close(exited)
			waitDone(t, done, "follow did not end when the run exited")
		})
	}
}

// rotateOnce makes beforeTimesOpen run rotate the first time a reader is
// about to open the times of the call-th log file it pairs, and never again.
func rotateOnce(t *testing.T, call int, rotate func()) {
	t.Helper()
	calls := 0
	beforeTimesOpen = func() {
		if calls++; calls == call {
			rotate()
		}
	}
	t.Cleanup(func() { beforeTimesOpen = nil })
}

// TestLogTimesPairedAcrossRotation: the writer rotates after a reader
// opened output.log and before it opens output.log.times, which then are
// the times of the new output.log. The reader pairs the file it opened
// with its own times, now output.log.1.times, and goes on to the new file.
func TestLogTimesPairedAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	w, clk := smallLogs(t, dir)
	defer w.Close()
	write := func(s string) {
		t.Helper()
		clk.Step(time.Second)
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("aaaaaaa\naaaaaaa\n") // fills output.log
	write("bbbbbbb\nbbbbbbb\n") // rotates it to output.log.1
	// The reader pairs output.log first: between the open of output.log
	// and that of its times, one more write rotates.
	rotateOnce(t, 1, func() { write("ccccccc\nccccccc\n") })

	exited := make(chan struct{})
	close(exited)
	var b bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- writeLogs(context.Background(), clk, dir, runtime.LogOptions{Timestamps: true, Follow: true}, exited, &b)
	}()
	waitDone(t, done, "the read did not end")
	want := ""
	for i, line := range []string{"aaaaaaa\n", "bbbbbbb\n", "ccccccc\n"} {
		want += strings.Repeat(fmt.Sprintf("2026-11-30T12:00:0%dZ %s", i+1, line), 2)
	}
	if b.String() != want {
		t.Fatalf("read\n%swant\n%s", b.String(), want)
	}
}

// TestLogTimesMissingMidRotation: a reader finds output.log.1 without its
// times because the writer has moved the file and not yet its times, as
// rotate does from one step to the next. The times are not missing for
// good (the run keeps times), so the reader waits for them; if they never
// come, it says so rather than that the run keeps no times.
func TestLogTimesMissingMidRotation(t *testing.T) {
	cases := []struct {
		name   string
		finish bool // the writer moves the times while the reader waits
	}{
		{"the writer goes on", true},
		{"the writer stopped for good", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, clk := smallLogs(t, dir)
			if _, err := w.Write([]byte("aaaaaaa\naaaaaaa\nbbbbbbb\n")); err != nil {
				t.Fatal(err)
			}
			w.Close()
			// The steps of the next rotation, stopped after output.log moved
			// and before its times did.
			for _, mv := range [][2]string{
				{logPath(dir, 1), logPath(dir, 2)},
				{timesPath(dir, 1), timesPath(dir, 2)},
				{logPath(dir, 0), logPath(dir, 1)},
			} {
				if err := os.Rename(mv[0], mv[1]); err != nil {
					t.Fatal(err)
				}
			}

			var b bytes.Buffer
			done := make(chan error, 1)
			go func() {
				done <- writeLogs(context.Background(), clk, dir, runtime.LogOptions{Timestamps: true}, nil, &b)
			}()
			var readErr error
			waits := 0
			testtool.WaitFor(t, waitLong, "the read to end", func() error {
				select {
				case readErr = <-done:
					return nil
				default:
				}
				if !clk.HasWaiters() {
					return errors.New("reading")
				}
				if waits++; waits == 1 && tc.finish {
					if err := os.Rename(timesPath(dir, 0), timesPath(dir, 1)); err != nil {
						t.Fatal(err)
					}
				}
				clk.Step(pairWait)
				return errors.New("waiting for the times")
			})
			if tc.finish {
				want := "2026-11-30T12:00:00Z aaaaaaa\n2026-11-30T12:00:00Z aaaaaaa\n2026-11-30T12:00:00Z bbbbbbb\n"
				if readErr != nil || b.String() != want || waits != 1 {
					t.Fatalf("after %d waits read\n%s%v\nwant, after 1 wait,\n%s", waits, b.String(), readErr, want)
				}
				return
			}
			if readErr == nil || errors.Is(readErr, runtime.ErrNoTimes) || !strings.Contains(readErr.Error(), logPath(dir, 1)+":") {
				t.Fatalf("after %d waits for times that never come: %v; want an error that names %s, not %v", waits, readErr, logPath(dir, 1), runtime.ErrNoTimes)
			}
		})
	}
}

// logsStart is when the fake clock of fileLogs starts.
var logsStart = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fileLogs is a writer of log files of 20 bytes in dir, keeping logFiles
// of them as the shim does, on a fake clock. write(i) writes the i-th
// file at its own time, i+1 seconds after logsStart: two lines, which fill
// it, so that the next write rotates. A reader's goroutine may call it.
func fileLogs(t *testing.T, dir string) (write func(i int), clk *clocktesting.FakeClock) {
	t.Helper()
	clk = clocktesting.NewFakeClock(logsStart)
	w, err := newRotatingWriter(dir, 20, logFiles, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return func(i int) {
		clk.SetTime(logsStart.Add(time.Duration(i+1) * time.Second))
		if _, err := io.WriteString(w, numbered(2*i, 2*i+2)); err != nil {
			t.Errorf("write file %d: %v", i, err)
		}
	}, clk
}

// fileLines is what a reader writes of files [from, to) of fileLogs.
func fileLines(from, to int, timestamps bool) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		lines := numbered(2*i, 2*i+2)
		if timestamps {
			at := logsStart.Add(time.Duration(i+1) * time.Second).Format(time.RFC3339Nano)
			lines = strings.ReplaceAll(lines, "line", at+" line")
		}
		b.WriteString(lines)
	}
	return b.String()
}

// rotateBeforeOpen makes beforeLogOpen run rotate the first time a reader
// is about to open the n-th log file, and never again.
func rotateBeforeOpen(t *testing.T, n int, rotate func()) {
	t.Helper()
	done := false
	beforeLogOpen = func(at int) {
		if at == n && !done {
			done = true
			rotate()
		}
	}
	t.Cleanup(func() {
		beforeLogOpen = nil
		if !done {
			t.Errorf("the writer never rotated before the reader opened log file %d", n)
		}
	})
}

// TestLogsReadAcrossRotation: the writer rotates, once or twice, as a
// reader is about to open one of the log files. The reader writes every
// line once and in order: those of the files there when it began (but the
// ones rotated out of existence before it reached them), maybe some of
// those written since, and, following, all of those.
func TestLogsReadAcrossRotation(t *testing.T) {
	cases := []struct {
		name      string
		files     int // written before the read
		rotations int // files written as the reader is about to open...
		at        int // ...this number, the first time
		lost      int // the oldest files rotated out before the reader reached them
	}{
		{"once, before output.log.1", 4, 1, 1, 0},
		{"once, before output.log.3", 4, 1, 3, 0},
		{"twice, before output.log.1", 3, 2, 1, 0},
		{"twice, before output.log.2", 2, 2, 2, 0},
		{"once, before output.log.1, with as many files as are kept", logFiles, 1, 1, 1},
		{"twice, before output.log.4, with as many files as are kept", logFiles, 2, 4, 1},
	}
	for _, tc := range cases {
		for _, opts := range []runtime.LogOptions{{}, {Timestamps: true}, {Follow: true}, {Follow: true, Timestamps: true}} {
			t.Run(fmt.Sprintf("%s/timestamps=%v/follow=%v", tc.name, opts.Timestamps, opts.Follow), func(t *testing.T) {
				dir := t.TempDir()
				write, clk := fileLogs(t, dir)
				for i := range tc.files {
					write(i)
				}
				rotateBeforeOpen(t, tc.at, func() {
					for i := range tc.rotations {
						write(tc.files + i)
					}
				})
				exited := make(chan struct{})
				close(exited)
				var b bytes.Buffer
				done := make(chan error, 1)
				go func() { done <- writeLogs(context.Background(), clk, dir, opts, exited, &b) }()
				waitDone(t, done, "the read did not end")
				all := tc.files + tc.rotations
				if opts.Follow {
					if want := fileLines(tc.lost, all, opts.Timestamps); b.String() != want {
						t.Fatalf("followed\n%swant\n%s", b.String(), want)
					}
					return
				}
				for to := tc.files; to <= all; to++ {
					if b.String() == fileLines(tc.lost, to, opts.Timestamps) {
						return
					}
				}
				t.Fatalf("read\n%swant the lines of files %d to %d, and maybe of some written since", b.String(), tc.lost, tc.files-1)
			})
		}
	}
}

// TestLogsFollowNextAcrossRotation: a follower whose file the writer has
// rotated twice goes on with the file written after it, and then the next,
// even when the writer rotates again as the follower looks for it.
func TestLogsFollowNextAcrossRotation(t *testing.T) {
	for _, timestamps := range []bool{false, true} {
		t.Run(fmt.Sprintf("timestamps=%v", timestamps), func(t *testing.T) {
			dir := t.TempDir()
			write, clk := fileLogs(t, dir)
			write(0)
			var b bytes.Buffer
			c := newLogCopier(&b, runtime.LogOptions{Timestamps: timestamps})
			d := logDir{path: dir, clk: clk, times: c.timed()}
			cur, err := d.open(0)
			if err != nil || cur == nil {
				t.Fatalf("open output.log: %v, %v", cur, err)
			}
			write(1)
			write(2) // the follower's file is output.log.2
			rotateBeforeOpen(t, 1, func() { write(3) })
			for {
				next, err := d.next(cur)
				cur.close()
				if err != nil {
					t.Fatal(err)
				}
				if next == nil {
					break
				}
				cur = next
				if _, err := c.copy(cur, 0); err != nil {
					t.Fatal(err)
				}
			}
			if want := fileLines(1, 4, timestamps); b.String() != want {
				t.Fatalf("followed\n%swant\n%s", b.String(), want)
			}
		})
	}
}

// rotatingOnOutput is the output of a follower that, when a line it is
// sent ends with on, makes the container write more: a way to have the
// writer append to the follower's file and rotate it between the
// follower's reading that file and its looking for the next one.
type rotatingOnOutput struct {
	bytes.Buffer
	on   map[string][]string // a line seen → what the container writes then
	logs *rotatingWriter
	t    *testing.T
}

func (o *rotatingOnOutput) Write(p []byte) (int, error) {
	n, _ := o.Buffer.Write(p)
	for line, writes := range o.on {
		if bytes.HasSuffix(p, []byte(line)) {
			delete(o.on, line)
			for _, w := range writes {
				if _, err := o.logs.Write([]byte(w)); err != nil {
					o.t.Error(err)
				}
			}
		}
	}
	return n, nil
}

// TestLogsFollowReadsRotatedFileToItsEnd: what the container wrote to the
// follower's file after the follower read it, and before the file was
// rotated, is read before the follower goes on with the next file.
func TestLogsFollowReadsRotatedFileToItsEnd(t *testing.T) {
	dir := t.TempDir()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	w, err := newRotatingWriter(dir, 24, 3, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("aaaaaaa\n")); err != nil {
		t.Fatal(err)
	}
	out := &rotatingOnOutput{logs: w, t: t, on: map[string][]string{
		"aaaaaaa\n": {"bbbbbbb\n"},
		// c fills output.log; d rotates it and starts the next.
		"bbbbbbb\n": {"ccccccc\n", "ddddddd\n"},
	}}
	exited := make(chan struct{})
	close(exited)
	if err := writeLogs(context.Background(), clk, dir, runtime.LogOptions{Follow: true}, exited, out); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "aaaaaaa\nbbbbbbb\nccccccc\nddddddd\n"; got != want {
		t.Fatalf("followed %q, want %q", got, want)
	}
}
