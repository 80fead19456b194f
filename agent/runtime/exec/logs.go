//go:build linux

package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/utils/clock"
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

// rotatingWriter appends to output.log and rotates it at logMaxBytes.
type rotatingWriter struct {
	dir  string
	max  int64
	keep int
	f    *os.File
	size int64
}

func newRotatingWriter(dir string, maxBytes int64, keep int) (*rotatingWriter, error) {
	w := &rotatingWriter{dir: dir, max: maxBytes, keep: keep}
	f, err := os.OpenFile(logPath(dir, 0), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	w.f, w.size = f, fi.Size()
	return w, nil
}

// Write splits p so that no file grows past the limit.
func (w *rotatingWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if w.size >= w.max {
			if err := w.rotate(); err != nil {
				return written, err
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

func (w *rotatingWriter) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	_ = os.Remove(logPath(w.dir, w.keep-1))
	for n := w.keep - 2; n >= 0; n-- {
		if err := os.Rename(logPath(w.dir, n), logPath(w.dir, n+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate log: %w", err)
		}
	}
	f, err := os.OpenFile(logPath(w.dir, 0), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	w.f, w.size = f, 0
	return nil
}

func (w *rotatingWriter) Close() error { return w.f.Close() }

// tailStart finds where the last n lines of the files begin: the index of
// the file (oldest first) and the offset in it. A final line without a
// newline counts as a line.
func tailStart(files []*os.File, n int64) (int, int64, error) {
	buf := make([]byte, 32<<10)
	newlines := int64(0)
	first := true
	for i := len(files) - 1; i >= 0; i-- {
		fi, err := files[i].Stat()
		if err != nil {
			return 0, 0, err
		}
		end := fi.Size()
		for end > 0 {
			start := max(end-int64(len(buf)), 0)
			chunk := buf[:end-start]
			if _, err := files[i].ReadAt(chunk, start); err != nil && err != io.EOF {
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

// openLogs opens the run's log files that exist, oldest first.
func openLogs(dir string) ([]*os.File, error) {
	var files []*os.File
	for n := logFiles - 1; n >= 0; n-- {
		f, err := os.Open(logPath(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			closeAll(files)
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// writeLogs writes the run's output in dir to w. With follow it keeps
// writing until ctx ends or exited is closed and the output is all written;
// a file renamed under it by rotation is read to its end before the new
// output.log is opened.
func writeLogs(ctx context.Context, clk clock.WithTicker, dir string, tail int64, follow bool, exited <-chan struct{}, w io.Writer) error {
	files, err := openLogs(dir)
	if err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	defer func() { closeAll(files) }()
	from, off := 0, int64(0)
	if tail > 0 {
		if from, off, err = tailStart(files, tail); err != nil {
			return fmt.Errorf("logs: %w", err)
		}
	}
	for i := from; i < len(files); i++ {
		if i > from {
			off = 0
		}
		if _, err := files[i].Seek(off, io.SeekStart); err != nil {
			return fmt.Errorf("logs: %w", err)
		}
		if _, err := io.Copy(w, files[i]); err != nil {
			return fmt.Errorf("logs: %w", err)
		}
	}
	if !follow {
		return nil
	}
	var cur *os.File
	if len(files) > 0 {
		cur = files[len(files)-1]
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
				if _, err := io.Copy(w, cur); err != nil {
					return fmt.Errorf("logs: %w", err)
				}
			}
			next, err := nextLog(dir, cur)
			if err != nil {
				return fmt.Errorf("logs: %w", err)
			}
			if next == nil {
				break
			}
			if cur != nil {
				cur.Close() // closed again by the deferred closeAll: harmless
			}
			files = append(files, next)
			cur = next
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

// nextLog opens the file written after cur, or returns nil when cur is
// still output.log (or output.log does not exist yet). cur may have been
// rotated several times: the file after it is the one with the next lower
// number. A file rotated out of existence is lost to the reader, which goes
// on with the oldest file left.
func nextLog(dir string, cur *os.File) (*os.File, error) {
	if cur == nil {
		f, err := os.Open(logPath(dir, 0))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return f, err
	}
	ci, err := cur.Stat()
	if err != nil {
		return nil, err
	}
	at := logFiles // not found: rotated away
	for n := 0; n < logFiles; n++ {
		if fi, err := os.Stat(logPath(dir, n)); err == nil && os.SameFile(ci, fi) {
			at = n
			break
		}
	}
	if at == 0 {
		return nil, nil
	}
	for n := at - 1; n >= 0; n-- {
		f, err := os.Open(logPath(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return f, err
	}
	return nil, nil
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
