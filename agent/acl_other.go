//go:build !linux

package agent

import "errors"

func setSearchACL(string, []int) error {
	return errors.New("POSIX ACLs need Linux")
}
