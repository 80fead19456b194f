//go:build !race

package apply

const raceEnabled = false
