package main

import (
	"fmt"
	"strconv"
	"time"
)

// requestTimeout is --request-timeout as kubectl reads it: a duration
// with its unit, or a whole number of seconds; 0 sets no limit.
type requestTimeout time.Duration

func (r *requestTimeout) String() string { return time.Duration(*r).String() }

func (r *requestTimeout) Type() string { return "duration" }

func (r *requestTimeout) Set(v string) error {
	if secs, err := strconv.ParseUint(v, 10, 31); err == nil {
		*r = requestTimeout(time.Duration(secs) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration with its unit (10s, 2m) or a number of seconds, not %q", v)
	}
	*r = requestTimeout(d)
	return nil
}

// client is the client's Config.Timeout: a negative one for no limit.
func (r requestTimeout) client() time.Duration {
	if r == 0 {
		return -1
	}
	return time.Duration(r)
}
