//go:build unix

package du

import (
	"io/fs"
	"syscall"
)

// inode names a file across its hard links.
type inode struct{ dev, ino uint64 }

// onDisk is the space the file's blocks take (st_blocks counts 512-byte
// units), which for a sparse file is less than its size.
func onDisk(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}

// device is the file system the file is on. (Stat_t's field types differ
// between systems, hence the conversions.)
func device(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Dev), true
}

// inodeOf is the file's inode, and whether it has other links to count
// once (directories are never hard-linked).
func inodeOf(fi fs.FileInfo) (inode, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.IsDir() || st.Nlink < 2 {
		return inode{}, false
	}
	return inode{uint64(st.Dev), uint64(st.Ino)}, true
}
