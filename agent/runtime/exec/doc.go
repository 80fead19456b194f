// Package exec runs each container as a host process under a small shim
// (the berth binary re-executed), so containers outlive the agent and their
// exit is never lost.
//
// State lives under Options.Root, one directory per run:
//
//	<Root>/<podUID>/containers/<name>/<attempt>/
//	    config.json   what to run (written by the runtime before the shim starts)
//	    state.json    shim pid, container pid and their start times (written by the shim once the container runs)
//	    exit.json     how the container ended (written by the shim, atomically, before it exits)
//	    output.log    stdout and stderr as written (a terminal's output, with tty); rotated to output.log.1 … output.log.4
//	    shim.log      the shim's own errors
//	    attach.sock   where the shim serves attach sessions while the container runs (mode 0600: the agent's user alone)
//
// The shim holds the container's standard streams and copies its output
// to the log and to the attached sessions: without stdin, stdout and
// stderr are one pipe, so the log keeps the order they were written in,
// and stdin is /dev/null; with stdin, stdin is a pipe the sessions write
// to and stdout and stderr two pipes, which the sessions get apart; with
// tty all three are a terminal whose master the shim holds. So an agent that
// restarted attaches to the containers it adopted as to its own.
//
// A start that fails (the executable is missing, the credentials are refused)
// leaves an exit.json with reason "StartError" and exit code 128.
package exec
