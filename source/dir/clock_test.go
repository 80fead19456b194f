package dir

import "k8s.io/utils/clock"

func realClock() clock.WithTicker { return clock.RealClock{} }
