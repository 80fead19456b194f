//go:build !linux

package pods

import "errors"

func setSearchACL(string, []int) error {
	return errors.New("POSIX ACLs need Linux")
}
