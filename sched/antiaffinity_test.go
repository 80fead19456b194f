package sched

import (
	"testing"

	"github.com/berth-dev/berth/api"
)

func TestPodAntiAffinity(t *testing.T) {
	const (
		mine     = "[node(s) didn't match pod anti-affinity rules]"
		existing = "[node(s) didn't satisfy existing pods anti-affinity rules]"
	)
	web := func(name string) *api.Pod { return makePod(name, podLabels("app", "web")) }
	loner := makePod("p", podLabels("app", "web"), antiAffinity(nil, "app", "web"))
	tests := []struct {
		name string
		node *NodeInfo
		pod  *api.Pod
		want string
	}{
		{"empty node", placed(makeNode("n")), loner, ""},
		{"matching pod there", placed(makeNode("n"), web("a")), loner, mine},
		{"other labels", placed(makeNode("n"), makePod("a", podLabels("app", "db"))), loner, ""},
		{"other namespace", placed(makeNode("n"), func() *api.Pod { p := web("a"); p.Namespace = "other"; return p }()), loner, ""},
		{"namespaces named", placed(makeNode("n"), func() *api.Pod { p := web("a"); p.Namespace = "other"; return p }()),
			makePod("p", antiAffinity([]string{"other"}, "app", "web")), mine},
		{"no hostname label, no domain", placed(makeNode("n", noHostname), web("a")), loner, ""},
		{"existing pod repels", placed(makeNode("n"), makePod("a", antiAffinity(nil, "app", "web"))), web("p"), existing},
		{"existing pod, not selected", placed(makeNode("n"), makePod("a", antiAffinity(nil, "app", "web"))), makePod("p", podLabels("app", "db")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonsOf(podAntiAffinity{}.Filter(NewPodInfo(tt.pod), tt.node)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
