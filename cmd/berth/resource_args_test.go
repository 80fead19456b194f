package main

import (
	"strings"
	"testing"
)

func TestParseResourceArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // kind=names;… in order
		err  string
	}{
		{args: []string{"po"}, want: "pods="},
		{args: []string{"deploy,svc", "web"}, want: "deployments=web;services=web"},
		{args: []string{"po,pods", "a"}, want: "pods=a"},
		{args: []string{"pod/a", "svc/b", "pod/c"}, want: "pods=a,c;services=b"},
		// "all" is the category, as kubectl's get all: workloads and services.
		{args: []string{"all"}, want: "pods=;replicationcontrollers=;services=;daemonsets=;deployments=;replicasets=;statefulsets=;horizontalpodautoscalers=;cronjobs=;jobs="},
		{args: []string{"svc,all", "web"}, want: "services=web;pods=web;replicationcontrollers=web;daemonsets=web;deployments=web;replicasets=web;statefulsets=web;horizontalpodautoscalers=web;cronjobs=web;jobs=web"},
		{args: []string{}, err: "you must specify the type of resource"},
		{args: []string{"nope"}, err: `doesn't have a resource type "nope"`},
		{args: []string{"po,"}, err: "empty resource type"},
		{args: []string{"po", "svc/x"}, err: "no need to specify a resource type"},
	} {
		reqs, err := parseResourceArgs(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		var got []string
		for _, r := range reqs {
			got = append(got, r.kind.Resource+"="+strings.Join(r.names, ","))
		}
		if g := strings.Join(got, ";"); g != c.want {
			t.Errorf("%q: %s, want %s", c.args, g, c.want)
		}
	}
}
