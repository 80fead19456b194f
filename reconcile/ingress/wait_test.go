package ingress

import "time"

// waitABit paces a poll for the event writer's asynchronous writes.
func waitABit() { time.Sleep(10 * time.Millisecond) }
