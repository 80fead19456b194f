//go:build !unix

package du

import "io/fs"

type inode struct{}

func onDisk(fi fs.FileInfo) int64 { return fi.Size() }

func device(fs.FileInfo) (uint64, bool) { return 0, false }

func inodeOf(fs.FileInfo) (inode, bool) { return inode{}, false }
