package api

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// checkParse parses query and checks the outcome: an error saying
// wantErr, or else want. It returns what was parsed and whether it is
// want, for the caller's further checks.
func checkParse[T any](t *testing.T, parse func(url.Values, bool) (T, error), query string, withContainer bool, want T, wantErr string) (T, bool) {
	t.Helper()
	q, _ := url.ParseQuery(query)
	got, err := parse(q, withContainer)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want one saying %q", query, err, wantErr)
		}
		return got, false
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%q: %+v, %v; want %+v", query, got, err, want)
		return got, false
	}
	return got, true
}

func TestParsePodLogOptions(t *testing.T) {
	five := int64(5)
	zero := int64(0)
	for _, tc := range []struct {
		query         string
		withContainer bool
		want          PodLogOptions
		err           string
	}{
		{query: "", want: PodLogOptions{}},
		{query: "container=app&follow=true&previous=1&timestamps=true&tailLines=5&sinceSeconds=30", withContainer: true,
			want: PodLogOptions{Container: "app", Follow: true, Previous: true, Timestamps: true, TailLines: &five, SinceSeconds: 30}},
		{query: "tailLines=0", want: PodLogOptions{TailLines: &zero}},
		{query: "sinceTime=2026-11-30T12:00:00%2B01:00", want: PodLogOptions{SinceTime: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)}},
		{query: "sinceSeconds=99999999999", want: PodLogOptions{SinceSeconds: MaxSinceSeconds}},
		{query: "limitBytes=20", want: PodLogOptions{LimitBytes: 20}},
		{query: "limitBytes=0", err: "limitBytes"},
		{query: "container=app", err: "log option container is not supported (follow, tailLines"},
		{query: "stream=All", withContainer: true, err: "log option stream is not supported (container, follow"},
		{query: "follow=true&timeout=60s", withContainer: true, want: PodLogOptions{Follow: true}},
		{query: "follow=true&timeout=60s", err: "log option timeout is not supported"},
		{query: "follow=yes", err: `log option follow="yes": want true or false`},
		{query: "tailLines=-1", err: `tailLines="-1"`},
		{query: "sinceSeconds=0", err: `sinceSeconds="0"`},
		{query: "sinceTime=noon", err: `sinceTime="noon"`},
		{query: "sinceSeconds=5&sinceTime=2026-11-30T12:00:00Z", err: "at most one of sinceTime or sinceSeconds"},
	} {
		got, ok := checkParse(t, ParsePodLogOptions, tc.query, tc.withContainer, tc.want, tc.err)
		if !ok {
			continue
		}
		// The query passed on reads back the same, container aside.
		back, err := ParsePodLogOptions(got.Query(), false)
		got.Container = ""
		if err != nil || !back.SinceTime.Equal(got.SinceTime) {
			t.Errorf("%q: read back %+v, %v", tc.query, back, err)
		}
		back.SinceTime, got.SinceTime = time.Time{}, time.Time{}
		if !reflect.DeepEqual(back, got) {
			t.Errorf("%q: read back %+v, want %+v", tc.query, back, got)
		}
	}
}

func TestParsePodExecOptions(t *testing.T) {
	for _, tc := range []struct {
		query         string
		withContainer bool
		want          PodExecOptions
		err           string
	}{
		{query: "command=sh&command=-c&command=echo+a&stdin=true&stdout=1&stderr=false",
			want: PodExecOptions{Command: []string{"sh", "-c", "echo a"}, Stdin: true, Stdout: true}},
		{query: "container=b&command=ls&stdout=true&stderr=true&tty=true", withContainer: true,
			want: PodExecOptions{Container: "b", Command: []string{"ls"}, Stdout: true, TTY: true}},
		{query: "stdout=true", err: "you must specify a command"},
		{query: "command=&stdout=true", err: "you must specify a command"},
		{query: "command=ls", err: "at least 1 of stdin, stdout, stderr"},
		{query: "command=ls&stderr=true&tty=true", err: "at least 1 of stdin, stdout, stderr"},
		{query: "command=ls&stdout=maybe", err: `exec option stdout="maybe": want true or false`},
		{query: "command=ls&stdout=true&container=b", err: "exec option container is not supported"},
		{query: "command=ls&stdout=true&input=x", withContainer: true, err: "exec option input is not supported (container, command"},
		// kubectl --request-timeout adds the API server's timeout to the
		// query; it does not pass on to the agent.
		{query: "command=ls&stdout=true&timeout=60s", withContainer: true, want: PodExecOptions{Command: []string{"ls"}, Stdout: true}},
		{query: "command=ls&stdout=true&timeout=60s", err: "exec option timeout is not supported"},
	} {
		got, ok := checkParse(t, ParsePodExecOptions, tc.query, tc.withContainer, tc.want, tc.err)
		if !ok {
			continue
		}
		back, err := ParsePodExecOptions(got.Query(), false)
		got.Container = ""
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("%q: read back %+v, %v; want %+v", tc.query, back, err, got)
		}
	}
}

func TestParsePodAttachOptions(t *testing.T) {
	for _, tc := range []struct {
		query         string
		withContainer bool
		want          PodAttachOptions
		err           string
	}{
		// What kubectl attach -i and kubectl run -i send.
		{query: "container=t&stdin=true&stdout=true&stderr=true", withContainer: true,
			want: PodAttachOptions{Container: "t", Stdin: true, Stdout: true, Stderr: true}},
		{query: "stdout=true&stderr=true", want: PodAttachOptions{Stdout: true, Stderr: true}},
		// A terminal carries stderr with stdout.
		{query: "stdin=true&stdout=true&stderr=true&tty=true", want: PodAttachOptions{Stdin: true, Stdout: true, TTY: true}},
		{query: "stdin=1", want: PodAttachOptions{Stdin: true}},
		{query: "", err: "at least 1 of stdin, stdout, stderr"},
		{query: "tty=true", err: "at least 1 of stdin, stdout, stderr"},
		{query: "stderr=true&tty=true", err: "at least 1 of stdin, stdout, stderr"},
		{query: "stdout=true&tty=sometimes", err: `attach option tty="sometimes": want true or false`},
		{query: "stdout=true&container=t", err: "attach option container is not supported (stdin, stdout"},
		{query: "stdout=true&command=sh", withContainer: true, err: "attach option command is not supported (container, stdin"},
		{query: "stdout=true&timeout=60s", withContainer: true, want: PodAttachOptions{Stdout: true}},
		{query: "stdout=true&timeout=60s", err: "attach option timeout is not supported"},
	} {
		got, ok := checkParse(t, ParsePodAttachOptions, tc.query, tc.withContainer, tc.want, tc.err)
		if !ok {
			continue
		}
		back, err := ParsePodAttachOptions(got.Query(), false)
		got.Container = ""
		if err != nil || back != got {
			t.Errorf("%q: read back %+v, %v; want %+v", tc.query, back, err, got)
		}
	}
}

// FuzzPodOptions: any query is read without a panic, and what is read
// passes on as a query that reads back the same.
func FuzzPodOptions(f *testing.F) {
	for _, s := range []string{"", "follow=true&tailLines=3", "sinceSeconds=5&sinceTime=x", "command=ls&stdout=true&tty=1", "container=a&command=", "stdin=true&stdout=true&stderr=true", "stderr=1&tty=true", "%zz"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, withContainer bool) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		if o, err := ParsePodLogOptions(q, withContainer); err == nil {
			back, err := ParsePodLogOptions(o.Query(), false)
			if err != nil || back.Follow != o.Follow || back.Previous != o.Previous || back.Timestamps != o.Timestamps ||
				back.SinceSeconds != o.SinceSeconds || !back.SinceTime.Equal(o.SinceTime.Truncate(time.Second)) ||
				(back.TailLines == nil) != (o.TailLines == nil) || (o.TailLines != nil && *back.TailLines != *o.TailLines) {
				t.Fatalf("%q: %+v read back as %+v, %v", raw, o, back, err)
			}
		}
		if o, err := ParsePodExecOptions(q, withContainer); err == nil {
			o.Container = ""
			back, err := ParsePodExecOptions(o.Query(), false)
			if err != nil || !reflect.DeepEqual(back, o) {
				t.Fatalf("%q: %+v read back as %+v, %v", raw, o, back, err)
			}
		}
		if o, err := ParsePodAttachOptions(q, withContainer); err == nil {
			o.Container = ""
			back, err := ParsePodAttachOptions(o.Query(), false)
			if err != nil || back != o || (o.TTY && o.Stderr) {
				t.Fatalf("%q: %+v read back as %+v, %v", raw, o, back, err)
			}
		}
	})
}
