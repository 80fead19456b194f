package api

import "testing"

func TestToleratesTaint(t *testing.T) {
	taint := &Taint{Key: "dedicated", Value: "web", Effect: TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		tol  Toleration
		want bool
	}{
		{"equal", Toleration{Key: "dedicated", Value: "web", Effect: TaintEffectNoSchedule}, true},
		{"no operator is Equal", Toleration{Key: "dedicated", Value: "db"}, false},
		{"exists, any effect", Toleration{Key: "dedicated", Operator: TolerationOpExists}, true},
		{"exists, other effect", Toleration{Key: "dedicated", Operator: TolerationOpExists, Effect: TaintEffectNoExecute}, false},
		{"empty key with Exists tolerates all", Toleration{Operator: TolerationOpExists}, true},
		{"other key", Toleration{Key: "gpu", Operator: TolerationOpExists}, false},
		{"unknown operator", Toleration{Key: "dedicated", Operator: "Gt", Value: "web"}, false},
	} {
		if got := tc.tol.ToleratesTaint(taint); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLocalVolumeNode(t *testing.T) {
	term := func(reqs []NodeSelectorRequirement, fields []NodeSelectorRequirement) *PersistentVolume {
		pv := &PersistentVolume{}
		pv.Spec.NodeAffinity = &VolumeNodeAffinity{Required: &NodeSelector{NodeSelectorTerms: []NodeSelectorTerm{{MatchExpressions: reqs, MatchFields: fields}}}}
		return pv
	}
	for _, tc := range []struct {
		name string
		pv   *PersistentVolume
		want string
	}{
		{"no affinity", &PersistentVolume{}, ""},
		{"hostname", term([]NodeSelectorRequirement{{Key: LabelHostname, Operator: NodeSelectorOpIn, Values: []string{"n1"}}}, nil), "n1"},
		{"two hosts", term([]NodeSelectorRequirement{{Key: LabelHostname, Operator: NodeSelectorOpIn, Values: []string{"n1", "n2"}}}, nil), ""},
		{"node name field", term(nil, []NodeSelectorRequirement{{Key: "metadata.name", Operator: NodeSelectorOpIn, Values: []string{"n3"}}}), "n3"},
		{"other label", term([]NodeSelectorRequirement{{Key: "zone", Operator: NodeSelectorOpIn, Values: []string{"a"}}}, nil), ""},
	} {
		if got := LocalVolumeNode(tc.pv); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
