package pods

import (
	"encoding/binary"
	"math"
	"slices"

	"golang.org/x/sys/unix"
)

// The kernel's form of a POSIX access ACL (linux/posix_acl_xattr.h): a
// version, then entries of a tag, permissions and an ID, sorted by tag
// and ID.
const (
	aclXattr     = "system.posix_acl_access"
	aclVersion   = 2
	aclUserObj   = 0x01
	aclUser      = 0x02
	aclGroupObj  = 0x04
	aclMask      = 0x10
	aclOther     = 0x20
	aclUndefined = math.MaxUint32
	aclSearch    = 0x1
	aclAll       = 0x7
)

// setSearchACL lets users search (pass through) dir besides its owner,
// who keeps every right; its group and others get none. It replaces the
// access ACL dir had, so it can be set again and again.
func setSearchACL(dir string, users []int) error {
	users = slices.Sorted(slices.Values(users))
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	entry := func(tag, perm uint16, id uint32) {
		b = binary.LittleEndian.AppendUint16(b, tag)
		b = binary.LittleEndian.AppendUint16(b, perm)
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	entry(aclUserObj, aclAll, aclUndefined)
	for _, u := range users {
		entry(aclUser, aclSearch, uint32(u))
	}
	entry(aclGroupObj, 0, aclUndefined)
	entry(aclMask, aclSearch, aclUndefined)
	entry(aclOther, 0, aclUndefined)
	return unix.Setxattr(dir, aclXattr, b, 0)
}
