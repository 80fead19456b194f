package main

import "time"

// timeNow is the clock the commands print ages against; the printers
// themselves take the time as an argument, and tests of the commands set
// this to a fixed instant.
var timeNow = time.Now
