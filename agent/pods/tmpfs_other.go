//go:build !linux

package pods

import "errors"

func mountTmpfs(string, int64) error {
	return errors.New("tmpfs volumes need Linux")
}

func unmountUnder(string) error { return nil }
