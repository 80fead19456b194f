//go:build linux

package exec

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// attachSocket is the name of the shim's attach socket in the run
// directory.
const attachSocket = "attach.sock"

// A unix socket's address holds at most 107 bytes of path, which a run
// directory deep under the agent's data dir can pass. Both ends reach the
// socket through /proc/self/fd/N/attach.sock instead, N a descriptor of
// the run directory, whatever the directory's own path.
func inDir(dir string, use func(path string) error) error {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	return use("/proc/self/fd/" + strconv.Itoa(fd) + "/" + attachSocket)
}

// listenAttach makes the attach socket of the run in dir, readable and
// writable by the shim's user alone (the agent's). The umask is the
// process's, so no other file may be in the making meanwhile: the shim
// calls it before it starts anything else that makes files.
func listenAttach(dir string) (*net.UnixListener, error) {
	var l *net.UnixListener
	err := inDir(dir, func(path string) error {
		old := unix.Umask(0o177)
		defer unix.Umask(old)
		var err error
		l, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("attach socket: %w", err)
	}
	// The name it was made by means another directory once the
	// descriptor is closed: the shim removes the socket by its own path.
	l.SetUnlinkOnClose(false)
	return l, nil
}

// dialAttach connects to the attach socket of the run in dir.
func dialAttach(dir string) (*net.UnixConn, error) {
	var c *net.UnixConn
	err := inDir(dir, func(path string) error {
		var err error
		c, err = net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
		return err
	})
	return c, err
}

// attachSocketPath is the socket's own path, to remove it by.
func attachSocketPath(dir string) string { return filepath.Join(dir, attachSocket) }
