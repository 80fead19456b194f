//go:build linux

package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// An attach session is a stream of frames on the shim's socket, each a
// type byte, a big-endian uint32 length and that many bytes. The agent
// opens with frameHello, then sends input, its end and terminal sizes;
// the shim sends output and, last, frameEnd.
const (
	// frameHello's one byte says which streams the session carries
	// (attachStdin, attachStdout, attachStderr).
	frameHello byte = 'h'
	// frameStdin carries input for the process.
	frameStdin byte = 'i'
	// frameStdinEnd says the session's input has ended.
	frameStdinEnd byte = 'e'
	// frameResize carries a terminal size: width and height, big-endian
	// uint16s.
	frameResize byte = 'r'
	// frameStdout and frameStderr carry output; a terminal's is stdout.
	frameStdout byte = 'o'
	frameStderr byte = 'x'
	// frameEnd ends the session: empty when the process's output ended or
	// the session's input did, else why the shim ended it.
	frameEnd byte = 'z'
)

// The streams of frameHello.
const (
	attachStdin byte = 1 << iota
	attachStdout
	attachStderr
)

// frameHeader is the size of a frame's type and length.
const frameHeader = 5

// maxFrame bounds a frame's payload: output and input go in pieces of at
// most attachChunk, and a frame larger than this is no frame of ours.
const maxFrame = 1 << 20

// attachChunk is the size of the pieces output and input are sent in.
const attachChunk = 32 << 10

// appendFrame appends the frame of typ and p to b.
func appendFrame(b []byte, typ byte, p []byte) []byte {
	b = append(b, typ, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], uint32(len(p)))
	return append(b, p...)
}

// writeFrame writes one frame in one write.
func writeFrame(w io.Writer, typ byte, p []byte) error {
	_, err := w.Write(appendFrame(make([]byte, 0, frameHeader+len(p)), typ, p))
	return err
}

// errFrameTooLarge: a frame's length is past maxFrame.
var errFrameTooLarge = errors.New("attach frame too large")

// readFrame reads the next frame into buf (grown as needed) and returns
// its type and payload, which is buf's until the next call. A stream that
// ends between frames is io.EOF; one that ends inside a frame,
// io.ErrUnexpectedEOF.
func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("%w: %d bytes of type %q (at most %d)", errFrameTooLarge, n, h[0], maxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	p := buf[:n]
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return h[0], p, nil
}

// resizePayload is frameResize's payload for a size.
func resizePayload(width, height uint16) []byte {
	var p [4]byte
	binary.BigEndian.PutUint16(p[:2], width)
	binary.BigEndian.PutUint16(p[2:], height)
	return p[:]
}

// parseResize reads frameResize's payload; false when it is not one.
func parseResize(p []byte) (width, height uint16, ok bool) {
	if len(p) != 4 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(p[:2]), binary.BigEndian.Uint16(p[2:]), true
}
