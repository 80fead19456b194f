// Package testtool finds the outside programs that some tests drive (git,
// dig, kubectl, runc, …): a test skips with a message when one is missing,
// and fails instead when BERTH_REQUIRE_TOOLS=1, as CI sets it. It also
// holds small helpers many packages' tests share: a Buffer safe to write
// from other goroutines, WaitFor and SayUntil, which poll rather than
// sleep, Scrape, which reads a /metrics handler, StallProxy, a TCP
// proxy that stops passing bytes as a frozen server does, FillDisk, and
// WriteKubeconfig.
package testtool
