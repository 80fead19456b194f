package testtool

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// FillDisk writes the file path until its file system has no room left
// (ENOSPC), for tests of a full disk on a small tmpfs of their own;
// removing the file makes the room again.
func FillDisk(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
