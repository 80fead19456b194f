// Command berth is the single binary of berth: the control plane, the node
// agent and the client commands (SPEC §1, §2).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/agent/runtime/exec"
)

// Exit codes (SPEC §1).
const (
	exitOK      = 0
	exitFailure = 1 // the operation failed, or diff found differences
	exitUsage   = 2 // bad usage or invalid input
)

// exitError carries the exit code a command ends with, so that main alone
// decides how the process ends and tests can run commands in-process.
type exitError struct {
	code int
	// err is printed as "Error: …"; nil when the command has already told
	// the user everything (validate printed each error).
	err error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf reports bad usage: a flag value or argument the command
// cannot work with. It exits 2.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// invalidInput reports input that is not valid (exit 2), after the
// command has printed the details.
func invalidInput() error {
	return &exitError{code: exitUsage}
}

// failed reports an operation that could not be done (exit 1).
func failed(err error) error {
	return &exitError{code: exitFailure, err: err}
}

func main() {
	// A container's shim is this binary started again: run it and exit.
	exec.ShimMain()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit code; it is main
// without the process, for tests.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root, g := newRootCommand(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		if ee.err != nil {
			printError(stderr, ee.err)
		}
		return ee.code
	case !g.started:
		// Cobra failed before any command ran: an unknown command or flag,
		// a missing required flag, wrong arguments.
		fmt.Fprintf(stderr, "Error: %v\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return exitUsage
	default:
		printError(stderr, err)
		return exitFailure
	}
}

// printError prints the error a command ended with: the server's own
// answer once, as kubectl does (`Error from server (NotFound): …`),
// anything else as `Error: …`. A server error wrapped with more context
// keeps that context, behind `Error: `.
func printError(stderr io.Writer, err error) {
	if _, ok := err.(apierrors.APIStatus); ok {
		fmt.Fprintln(stderr, errorMessage(err))
		return
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
}
