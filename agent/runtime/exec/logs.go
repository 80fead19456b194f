//go:build linux

package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/agent/runtime"
)

// Log rotation: the shim starts a new output.log once the current one holds
// logMaxBytes, keeping logFiles files in all. Tests shrink logMaxBytes.
var (
	logMaxBytes int64 = 10 << 20
	logFiles          = 5
)

// followPeriod is how often a following reader looks for new output.
const followPeriod = 100 * time.Millisecond

// logPath is the path of the n-th log file of dir: 0 is the one being
// written, logFiles-1 the oldest.
func logPath(dir string, n int) string {
	p := filepath.Join(dir, logFile)
	if n > 0 {
		p += "." + strconv.Itoa(n)
	}
	return p
}

// timesPath is the path of the write times of the n-th log file (see
// rotatingWriter).
func timesPath(dir string, n int) string { return logPath(dir, n) + ".times" }

// A log file's write times are a file of entries of timesEntrySize bytes:
// the offset in the log file where a write began, then when (Unix
// nanoseconds), both little-endian int64. A line's time is that of the
// last entry at or before its first byte: when the runtime read it, as
// the kubelet's runtimes stamp lines. Writes within timesResolution of the
// last entry share it, so a container that writes line by line in a burst
// adds one entry, not one a line.
const (
	timesEntrySize  = 16
	timesResolution = time.Millisecond
)

// rotatingWriter appends to output.log and rotates it at logMaxBytes,
// recording when each write came in output.log.times.
type rotatingWriter struct {
	dir  string
	max  int64
	keep int
	now  func() time.Time
	f    *os.File
	size int64
	// times is the current file's write times; stamped is the time of its
	// last entry (zero: none yet).
	times   *os.File
	stamped time.Time
}

func newRotatingWriter(dir string, maxBytes int64, keep int, now func() time.Time) (*rotatingWriter, error) {
	w := &rotatingWriter{dir: dir, max: maxBytes, keep: keep, now: now}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// open opens output.log and its times for appending. The times come
// first, so that a reader never finds a new output.log without them.
func (w *rotatingWriter) open() error {
	times, err := os.OpenFile(timesPath(w.dir, 0), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("open log times: %w", err)
	}
	f, err := os.OpenFile(logPath(w.dir, 0), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		times.Close()
		return fmt.Errorf("open log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		times.Close()
		return fmt.Errorf("open log: %w", err)
	}
	w.f, w.size, w.times, w.stamped = f, fi.Size(), times, time.Time{}
	return nil
}

// Write splits p so that no file grows past the limit. The time of a
// write is recorded before its bytes, so that a reader that sees the
// bytes finds their time.
func (w *rotatingWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if w.size >= w.max {
			if err := w.rotate(); err != nil {
				return written, err
			}
		}
		if now := w.now(); w.stamped.IsZero() || now.Sub(w.stamped) >= timesResolution {
			var e [timesEntrySize]byte
			binary.LittleEndian.PutUint64(e[:8], uint64(w.size))
			binary.LittleEndian.PutUint64(e[8:], uint64(now.UnixNano()))
			// A lost time costs the lines their own time (they take the
			// one before), not their output.
			if _, err := w.times.Write(e[:]); err == nil {
				w.stamped = now
			}
		}
		chunk := p[:min(int64(len(p)), w.max-w.size)]
		n, err := w.f.Write(chunk)
		written += n
		w.size += int64(n)
		if err != nil {
			return written, fmt.Errorf("write log: %w", err)
		}
		p = p[n:]
	}
	return written, nil
}

// rotate moves each file up one number, the oldest first, and each file's
// times right after the file: a reader pairing a file with its times
// (logDir.pairTimes) relies on never finding, at one number, a log file and
// the times of another.
func (w *rotatingWriter) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	w.times.Close()
	_ = os.Remove(logPath(w.dir, w.keep-1))
	_ = os.Remove(timesPath(w.dir, w.keep-1))
	for n := w.keep - 2; n >= 0; n-- {
		if err := os.Rename(logPath(w.dir, n), logPath(w.dir, n+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate log: %w", err)
		}
		if err := os.Rename(timesPath(w.dir, n), timesPath(w.dir, n+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate log: %w", err)
		}
	}
	if err := w.open(); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	return nil
}

func (w *rotatingWriter) Close() error {
	w.times.Close()
	return w.f.Close()
}

// tailStart finds where the last n lines of the files begin: the index of
// the file (oldest first) and the offset in it. A final line without a
// newline counts as a line.
func tailStart(files []*openedLog, n int64) (int, int64, error) {
	buf := make([]byte, 32<<10)
	newlines := int64(0)
	first := true
	for i := len(files) - 1; i >= 0; i-- {
		fi, err := files[i].f.Stat()
		if err != nil {
			return 0, 0, err
		}
		end := fi.Size()
		for end > 0 {
			start := max(end-int64(len(buf)), 0)
			chunk := buf[:end-start]
			if _, err := files[i].f.ReadAt(chunk, start); err != nil && err != io.EOF {
				return 0, 0, err
			}
			for j := len(chunk) - 1; j >= 0; j-- {
				if chunk[j] != '\n' {
					first = false
					continue
				}
				if first {
					// The newline that ends the output ends the last line;
					// it does not start one.
					first = false
					continue
				}
				newlines++
				if newlines == n {
					return i, start + int64(j) + 1, nil
				}
			}
			end = start
		}
	}
	return 0, 0, nil
}

// openedLog is one of a run's log files and its write times.
type openedLog struct {
	f     *os.File
	times *logTimes
}

func (l openedLog) close() {
	l.f.Close()
	l.times.close()
}

// logDir opens the log files of the run directory path, each with its own
// write times when the reader wants them (times), else with none.
type logDir struct {
	path  string
	clk   clock.Clock
	times bool
}

// A reader pairs a log file with its times by path while the writer may
// be rotating them, which it does in steps: a file, then its times, move
// up one number; a new output.log and its times are made, one after the
// other (the times first since they are, the file first by shims started
// before). Each step leaves a number with a file and its times, or with
// one of them alone, never with a file and another file's times. A file
// only moves up, and an open file cannot be replaced by itself, so a
// reader that opened a file at a number, then times at that number, and
// then finds the file still there, had it there all along: the times are
// the file's own. When the file moved, the reader tries again where it
// went; when its times are missing while the run keeps times, the writer
// is between two steps and the reader tries again after pairWait.
// pairTries bounds both.
const (
	pairTries = 20
	pairWait  = 5 * time.Millisecond
)

// beforeLogOpen and beforeTimesOpen, when set, run each time a reader is
// about to open the n-th log file, or a log file's times: tests rotate the
// log there.
var (
	beforeLogOpen   func(n int)
	beforeTimesOpen func()
)

// open opens the n-th log file and its times; nil when there is no such
// file, or when its times are wanted and it was rotated out of existence
// before they were found.
func (d logDir) open(n int) (*openedLog, error) {
	if beforeLogOpen != nil {
		beforeLogOpen(n)
	}
	f, err := os.Open(logPath(d.path, n))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !d.times {
		return &openedLog{f: f, times: &logTimes{}}, nil
	}
	times, err := d.pairTimes(f, n)
	if times == nil || err != nil {
		f.Close()
		return nil, err
	}
	return &openedLog{f: f, times: times}, nil
}

// pairTimes opens the times of f, the log file opened at number n (see
// pairTries); nil when f was rotated out of existence, with its times.
func (d logDir) pairTimes(f *os.File, n int) (*logTimes, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	for try := 0; try < pairTries; try++ {
		if try > 0 {
			if n = d.index(fi); n == logFiles {
				return nil, nil
			}
		}
		if beforeTimesOpen != nil {
			beforeTimesOpen()
		}
		times, err := os.Open(timesPath(d.path, n))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if still, err := d.holds(n, fi); err != nil || !still {
			if times != nil {
				times.Close()
			}
			if err != nil {
				return nil, err
			}
			continue // rotated since it was seen at n: look where it went
		}
		if times != nil {
			return &logTimes{f: times}, nil
		}
		if !keepsTimes(d.path) {
			return &logTimes{}, nil
		}
		<-d.clk.After(pairWait)
	}
	return nil, fmt.Errorf("%s: its write times were not found in %d tries while the log rotated", logPath(d.path, n), pairTries)
}

// holds tells whether the n-th log file is fi.
func (d logDir) holds(n int, fi os.FileInfo) (bool, error) {
	at, err := os.Stat(logPath(d.path, n))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, at), nil
}

// index is the number of the log file fi, logFiles when it is none of
// them (rotated out of existence). It looks from output.log up, the way
// rotation moves files, so a file that is there all along is found.
func (d logDir) index(fi os.FileInfo) int {
	for n := range logFiles {
		if ok, _ := d.holds(n, fi); ok {
			return n
		}
	}
	return logFiles
}

// keepsTimes tells whether the run in dir keeps write times. A run that
// keeps them has a times file from before its container starts, and one
// at every moment after: rotation removes only the oldest and moves the
// others up, the way this looks, so the look finds one. A run started by
// an older agent has none.
func keepsTimes(dir string) bool {
	for n := 0; n < logFiles; n++ {
		if _, err := os.Stat(timesPath(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// walk hands visit the run's log files one at a time, from the newest to
// the oldest, with what Stat says of each, until visit returns false.
// visit owns each file it is handed.
//
// The writer may rotate while walk opens the files by number, one after
// the other, so after each open walk checks that the file it last handed
// on is still at the number where it saw it. If so, that file was there
// all along (a file only moves up), and the numbers between, found
// empty, stayed empty (a number is filled only from the one below it): the
// file just opened is the one written before it, and there is none when
// walk found none. If the file moved, the one just opened may be any,
// even one written after it: walk closes it and looks on from where the
// file went. That number rises with each such look, so there are fewer
// than logFiles of them. A file rotated out of existence ends the walk:
// every older one went before it.
func (d logDir) walk(visit func(*openedLog, os.FileInfo) bool) error {
	var last os.FileInfo // the file last handed on, seen at number at
	at := -1
	for n := 0; n < logFiles; n++ {
		l, err := d.open(n)
		if err != nil {
			return err
		}
		if last != nil {
			if still, err := d.holds(at, last); err != nil || !still {
				if l != nil {
					l.close()
				}
				if err != nil {
					return err
				}
				if at = d.index(last); at == logFiles {
					return nil
				}
				n = at
				continue
			}
		}
		if l == nil {
			continue
		}
		if last, err = l.f.Stat(); err != nil {
			l.close()
			return err
		}
		at = n
		if !visit(l, last) {
			return nil
		}
	}
	return nil
}

// openAll opens the run's log files that exist, oldest first.
func (d logDir) openAll() ([]*openedLog, error) {
	var files []*openedLog
	err := d.walk(func(l *openedLog, _ os.FileInfo) bool {
		files = append(files, l)
		return true
	})
	if err != nil {
		closeAll(files)
		return nil, err
	}
	slices.Reverse(files)
	return files, nil
}

func closeAll(files []*openedLog) {
	for _, l := range files {
		l.close()
	}
}

// logTimes is a log file's write times, read as far as the file goes.
type logTimes struct {
	f       *os.File // nil: none were kept, or none are wanted
	entries []timesEntry
	read    int64
}

type timesEntry struct {
	off int64
	at  time.Time
}

func (t *logTimes) close() {
	if t.f != nil {
		t.f.Close()
	}
}

// at is the time of the byte at off: that of the last write that began at
// or before it, among the times read so far (refresh). false when no time
// is known for it.
func (t *logTimes) at(off int64) (time.Time, bool) {
	i := sort.Search(len(t.entries), func(i int) bool { return t.entries[i].off > off })
	if i == 0 {
		return time.Time{}, false
	}
	return t.entries[i-1].at, true
}

// refresh reads the entries written since the last read.
func (t *logTimes) refresh() {
	if t.f == nil {
		return
	}
	var buf [64 * timesEntrySize]byte
	for {
		n, err := t.f.ReadAt(buf[:], t.read)
		n -= n % timesEntrySize // a half-written entry is read next time
		for i := 0; i < n; i += timesEntrySize {
			t.entries = append(t.entries, timesEntry{
				off: int64(binary.LittleEndian.Uint64(buf[i:])),
				at:  time.Unix(0, int64(binary.LittleEndian.Uint64(buf[i+8:]))).UTC(),
			})
		}
		t.read += int64(n)
		if err != nil || n < len(buf) {
			return
		}
	}
}

// logCopier copies log files to w from an offset to their current end: as
// they are, or line by line with each line's time in front (Timestamps)
// and without the lines written before Since.
type logCopier struct {
	w          io.Writer
	timestamps bool
	since      time.Time
	buf        []byte
	// atStart: the next byte begins a line; skip: the current line is
	// left out.
	atStart, skip bool
}

func newLogCopier(w io.Writer, opts runtime.LogOptions) *logCopier {
	return &logCopier{w: w, timestamps: opts.Timestamps, since: opts.Since, buf: make([]byte, 32<<10), atStart: true}
}

// timed tells whether the copier needs the lines' times.
func (c *logCopier) timed() bool { return c.timestamps || !c.since.IsZero() }

// copy writes l from off to its end and returns the offset it reached.
func (c *logCopier) copy(l *openedLog, off int64) (int64, error) {
	lines := c.timed()
	for {
		n, err := l.f.ReadAt(c.buf, off)
		if n > 0 {
			if !lines {
				if _, werr := c.w.Write(c.buf[:n]); werr != nil {
					return off, werr
				}
				off += int64(n)
			} else {
				// Every write's time is recorded before its bytes: one
				// read of the times covers every line of what was read.
				l.times.refresh()
				var lerr error
				if off, lerr = c.lines(l, off, c.buf[:n]); lerr != nil {
					return off, lerr
				}
			}
		}
		if err == io.EOF {
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

// lines writes chunk, read from l at off, a line at a time.
func (c *logCopier) lines(l *openedLog, off int64, chunk []byte) (int64, error) {
	for len(chunk) > 0 {
		if c.atStart {
			at, ok := l.times.at(off)
			if !ok {
				return off, runtime.ErrNoTimes
			}
			c.skip = !c.since.IsZero() && at.Before(c.since)
			if !c.skip && c.timestamps {
				if _, err := io.WriteString(c.w, at.Format(time.RFC3339Nano)+" "); err != nil {
					return off, err
				}
			}
			c.atStart = false
		}
		end := len(chunk)
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			end, c.atStart = i+1, true
		}
		if !c.skip {
			if _, err := c.w.Write(chunk[:end]); err != nil {
				return off, err
			}
		}
		chunk = chunk[end:]
		off += int64(end)
	}
	return off, nil
}

// writeLogs writes the run's output in dir to w, as opts ask. With
// follow it keeps writing until ctx ends or exited is closed and the
// output is all written; a file renamed under it by rotation is read to
// its end before the new output.log is opened.
//
// Each file is closed, with its times, once the reader is past it, so
// that a follower holds only the file it reads: a file rotation removes
// keeps its space while it is open, and a follow can last for days.
func writeLogs(ctx context.Context, clk clock.WithTicker, dir string, opts runtime.LogOptions, exited <-chan struct{}, w io.Writer) error {
	c := newLogCopier(w, opts)
	d := logDir{path: dir, clk: clk, times: c.timed()}
	files, err := d.openAll()
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	// files holds the files still open: those not read yet and the one
	// being read.
	defer func() { closeAll(files) }()
	from, off := 0, int64(0)
	if opts.TailLines > 0 {
		if from, off, err = tailStart(files, opts.TailLines); err != nil {
			return fmt.Errorf("logs: %w", err)
		}
	}
	closeAll(files[:from])
	files = files[from:]
	for len(files) > 0 {
		if off, err = c.copy(files[0], off); err != nil {
			return fmt.Errorf("logs: %w", err)
		}
		if len(files) == 1 {
			break // the newest, which a follower goes on reading
		}
		files[0].close()
		files, off = files[1:], 0
	}
	if !opts.Follow {
		return nil
	}
	var cur *openedLog
	if len(files) > 0 {
		cur = files[0]
	}
	tick := clk.NewTicker(followPeriod)
	defer tick.Stop()
	for {
		done := false
		select {
		case <-exited:
			done = true
		default:
		}
		// Read what the current file holds; if rotation renamed it, go on
		// with the file written after it.
		for {
			if cur != nil {
				if off, err = c.copy(cur, off); err != nil {
					return fmt.Errorf("logs: %w", err)
				}
			}
			next, err := d.next(cur)
			if err != nil {
				return fmt.Errorf("logs: %w", err)
			}
			if next == nil {
				break
			}
			if cur != nil {
				// What was written to cur after it was read and before it
				// was rotated: the writer closes a file before it renames
				// it, so nothing comes after this.
				if _, err = c.copy(cur, off); err != nil {
					return fmt.Errorf("logs: %w", err)
				}
				cur.close()
			}
			cur, off = next, 0
			files = []*openedLog{cur}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-exited:
		case <-tick.C():
		}
	}
}

// next opens the file written after cur, or returns nil when cur is
// still the newest (or there is no file yet). cur may have been rotated
// several times, and be rotated again as next looks: next walks the files
// from the newest down to cur and opens the one it met just before cur. A
// file rotated out of existence is lost to the reader, which goes on with
// the oldest file left; a reader with no file yet starts there too.
func (d logDir) next(cur *openedLog) (*openedLog, error) {
	var ci os.FileInfo
	if cur != nil {
		var err error
		if ci, err = cur.f.Stat(); err != nil {
			return nil, err
		}
		if newest, err := d.holds(0, ci); newest || err != nil {
			return nil, err
		}
	}
	var after *openedLog // the file met before cur
	err := d.walk(func(l *openedLog, fi os.FileInfo) bool {
		if ci != nil && os.SameFile(fi, ci) {
			l.close()
			return false
		}
		if after != nil {
			after.close()
		}
		after = l
		return true
	})
	if err != nil {
		if after != nil {
			after.close()
		}
		return nil, err
	}
	return after, nil
}

// cappedBuffer keeps the first max bytes written to it and drops the rest,
// as the kubelet caps the output of a probe.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
