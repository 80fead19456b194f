package api

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The options of a container's log, of a command run beside it and of an
// attach to its process, as Kubernetes' PodLogOptions, PodExecOptions and
// PodAttachOptions name them (the part berth serves), read from the query
// of pods/log, pods/exec and pods/attach and, container left out, of the
// agent's endpoints (ContainerLogsPath, ContainerExecPath,
// ContainerAttachPath): the API server checks them and passes them on,
// the agent checks them again, with this one reading.

// MaxSinceSeconds bounds sinceSeconds: a hundred years, well inside a
// time.Duration; more means everything, as it does.
const MaxSinceSeconds = 100 * 365 * 24 * 3600

// PodLogOptions select the part of a container's log to read.
//
// +k8s:deepcopy-gen=false
// +k8s:openapi-gen=false
type PodLogOptions struct {
	// Container names the container; empty is the pod's only one.
	Container  string
	Follow     bool
	Previous   bool
	Timestamps bool
	// TailLines, when not nil, is how many of the last lines to read.
	TailLines *int64
	// SinceSeconds (counted back on the clock of the agent that stamped
	// the lines) or SinceTime, when set, leave out the lines written
	// before.
	SinceSeconds int64
	SinceTime    time.Time
	// LimitBytes, when positive, ends the log after that many bytes, in
	// the middle of a line if that is where they end.
	LimitBytes int64
}

var (
	podLogParams    = []string{"follow", "tailLines", "previous", "timestamps", "sinceSeconds", "sinceTime", "limitBytes"}
	podExecParams   = []string{"command", "stdin", "stdout", "stderr", "tty"}
	podAttachParams = []string{"stdin", "stdout", "stderr", "tty"}
)

// ParsePodLogOptions reads a log query, "container" only withContainer.
// Any other parameter, a value that is not one, and both since forms are
// errors, so that an option is never silently ignored.
func ParsePodLogOptions(q url.Values, withContainer bool) (PodLogOptions, error) {
	var o PodLogOptions
	if err := onlyParams(q, "log", podLogParams, withContainer); err != nil {
		return o, err
	}
	o.Container = q.Get("container")
	for _, b := range []struct {
		name string
		v    *bool
	}{{"follow", &o.Follow}, {"previous", &o.Previous}, {"timestamps", &o.Timestamps}} {
		if err := parseBoolParam(q, "log", b.name, b.v); err != nil {
			return o, err
		}
	}
	secs, since := q.Get("sinceSeconds"), q.Get("sinceTime")
	switch {
	case secs != "" && since != "":
		return o, errors.New("at most one of sinceTime or sinceSeconds may be specified")
	case secs != "":
		n, err := strconv.ParseInt(secs, 10, 64)
		if err != nil || n < 1 {
			return o, fmt.Errorf("log option sinceSeconds=%q: want a whole number of seconds, 1 or more", secs)
		}
		o.SinceSeconds = min(n, MaxSinceSeconds)
	case since != "":
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			return o, fmt.Errorf("log option sinceTime=%q: want an RFC 3339 time", since)
		}
		o.SinceTime = t.UTC()
	}
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, fmt.Errorf("log option tailLines=%q: want a whole number of 0 or more", v)
		}
		o.TailLines = &n
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return o, fmt.Errorf("log option limitBytes=%q: want a whole number of bytes, 1 or more", v)
		}
		o.LimitBytes = n
	}
	return o, nil
}

// Query is the options as a log query, without the container.
func (o PodLogOptions) Query() url.Values {
	q := url.Values{}
	for _, b := range []struct {
		name string
		v    bool
	}{{"follow", o.Follow}, {"previous", o.Previous}, {"timestamps", o.Timestamps}} {
		if b.v {
			q.Set(b.name, "true")
		}
	}
	if o.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*o.TailLines, 10))
	}
	if o.SinceSeconds > 0 {
		q.Set("sinceSeconds", strconv.FormatInt(o.SinceSeconds, 10))
	}
	if o.LimitBytes > 0 {
		q.Set("limitBytes", strconv.FormatInt(o.LimitBytes, 10))
	}
	if !o.SinceTime.IsZero() {
		q.Set("sinceTime", o.SinceTime.UTC().Format(time.RFC3339))
	}
	return q
}

// PodExecOptions say what to run beside a container and which of its
// streams to carry.
//
// +k8s:deepcopy-gen=false
// +k8s:openapi-gen=false
type PodExecOptions struct {
	// Container names the container; empty is the pod's only one.
	Container string
	// Command is the program and its arguments, one query value each.
	Command                    []string
	Stdin, Stdout, Stderr, TTY bool
}

// ParsePodExecOptions reads an exec query, "container" only
// withContainer: a command, and at least one stream. A terminal carries
// stderr with stdout, so with tty Stderr is false.
func ParsePodExecOptions(q url.Values, withContainer bool) (PodExecOptions, error) {
	var o PodExecOptions
	if err := onlyParams(q, "exec", podExecParams, withContainer); err != nil {
		return o, err
	}
	o.Container = q.Get("container")
	o.Command = q["command"]
	if len(o.Command) == 0 || o.Command[0] == "" {
		return o, errors.New("you must specify a command (command=PROGRAM, then command=ARG for each argument)")
	}
	if err := parseStreams(q, "exec", &o.Stdin, &o.Stdout, &o.Stderr, &o.TTY); err != nil {
		return o, err
	}
	return o, nil
}

// Query is the options as an exec query, without the container.
func (o PodExecOptions) Query() url.Values {
	q := streamsQuery(o.Stdin, o.Stdout, o.Stderr, o.TTY)
	q["command"] = o.Command
	return q
}

// PodAttachOptions say which of a container's streams an attach carries.
//
// +k8s:deepcopy-gen=false
// +k8s:openapi-gen=false
type PodAttachOptions struct {
	// Container names the container; empty is the pod's only one.
	Container                  string
	Stdin, Stdout, Stderr, TTY bool
}

// ParsePodAttachOptions reads an attach query, "container" only
// withContainer: at least one stream, and with tty no Stderr, as for an
// exec.
func ParsePodAttachOptions(q url.Values, withContainer bool) (PodAttachOptions, error) {
	var o PodAttachOptions
	if err := onlyParams(q, "attach", podAttachParams, withContainer); err != nil {
		return o, err
	}
	o.Container = q.Get("container")
	if err := parseStreams(q, "attach", &o.Stdin, &o.Stdout, &o.Stderr, &o.TTY); err != nil {
		return o, err
	}
	return o, nil
}

// Query is the options as an attach query, without the container.
func (o PodAttachOptions) Query() url.Values {
	return streamsQuery(o.Stdin, o.Stdout, o.Stderr, o.TTY)
}

// parseStreams reads the streams an exec or an attach carries: stderr
// never with a terminal, which carries it with stdout, and then at least
// one.
func parseStreams(q url.Values, what string, stdin, stdout, stderr, tty *bool) error {
	for _, b := range []struct {
		name string
		v    *bool
	}{{"stdin", stdin}, {"stdout", stdout}, {"stderr", stderr}, {"tty", tty}} {
		if err := parseBoolParam(q, what, b.name, b.v); err != nil {
			return err
		}
	}
	// Stderr goes first, as the kubelet drops it: stderr and tty alone
	// carry nothing.
	if *tty {
		*stderr = false
	}
	if !*stdin && !*stdout && !*stderr {
		return errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return nil
}

// streamsQuery is the query of the streams parseStreams reads.
func streamsQuery(stdin, stdout, stderr, tty bool) url.Values {
	q := url.Values{}
	for _, b := range []struct {
		name string
		v    bool
	}{{"stdin", stdin}, {"stdout", stdout}, {"stderr", stderr}, {"tty", tty}} {
		if b.v {
			q.Set(b.name, "true")
		}
	}
	return q
}

// requestTimeoutParam is the API server's own parameter that kubectl
// adds to every request it makes with --request-timeout. It is no option
// of a log or an exec: as kube-apiserver does for such long-running
// requests, the API server takes it and lets the stream run.
const requestTimeoutParam = "timeout"

// onlyParams refuses a parameter that is not one of these (or, in the
// API server's query, withContainer, container and the request timeout).
func onlyParams(q url.Values, what string, params []string, withContainer bool) error {
	for k := range q {
		if slices.Contains(params, k) || (withContainer && (k == "container" || k == requestTimeoutParam)) {
			continue
		}
		all := params
		if withContainer {
			all = append([]string{"container"}, params...)
		}
		return fmt.Errorf("%s option %s is not supported (%s are)", what, k, strings.Join(all, ", "))
	}
	return nil
}

// parseBoolParam reads a true or false parameter, when it is there.
func parseBoolParam(q url.Values, what, name string, v *bool) error {
	s := q.Get(name)
	if s == "" {
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%s option %s=%q: want true or false", what, name, s)
	}
	*v = b
	return nil
}
