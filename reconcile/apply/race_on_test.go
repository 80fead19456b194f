//go:build race

package apply

// raceEnabled: the race detector slows the 10,000-object test tenfold.
const raceEnabled = true
