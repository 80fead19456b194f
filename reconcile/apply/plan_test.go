package apply

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
)

// desired prepares manifests as a revision of fleet.
func desired(t *testing.T, manifests ...string) []*Desired {
	t.Helper()
	rev := decode(t, "r", "m.yaml", docs(manifests...))
	out, errs := Prepare(fleet, rev.Objects, rev.Errors, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return out
}

// stored is an object as the store would hold it, applied by owner ("" for
// none).
func stored(t *testing.T, manifest, owner string) api.Object {
	t.Helper()
	obj, errs := api.DecodeObject([]byte(manifest), api.DecodeOptions{DropStatus: true})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	api.Default(obj)
	obj.SetUID(types.UID("uid-" + obj.GetName()))
	obj.SetResourceVersion("7")
	obj.SetCreationTimestamp(metav1.Unix(1, 0))
	if owner != "" {
		markSource(obj, owner)
	}
	return obj
}

func liveMap(objs ...api.Object) map[Key]api.Object {
	m := map[Key]api.Object{}
	for _, o := range objs {
		m[KeyOf(o)] = o
	}
	return m
}

func defaultNS() map[string]*api.Namespace {
	return map[string]*api.Namespace{"default": {ObjectMeta: metav1.ObjectMeta{Name: "default"}}}
}

// summary renders a plan's steps as
// "action Kind/ns/name[+adopt[(from)]][+drift]".
func summary(p *Plan) string {
	var b []string
	for _, s := range p.Steps {
		x := fmt.Sprintf("%s %s", s.Action, s.Key)
		if s.Adopt {
			x += "+adopt"
		}
		if s.From != "" {
			x += "(" + s.From + ")"
		}
		if s.Drift {
			x += "+drift(" + strings.Join(s.Fields, ",") + ")"
		}
		b = append(b, x)
	}
	return strings.Join(b, "; ")
}

func TestDiff(t *testing.T) {
	cmA, cmB := configMap("a", "1"), configMap("b", "1")
	terminating := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &metav1.Time{}}}
	keep := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  annotations:\n    berth.dev/prune: disabled\n"
	owned := stored(t, configMap("rs", "1"), fleet)
	yes := true
	owned.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "u", Controller: &yes}})

	tests := []struct {
		name      string
		in        func() Input
		want      string
		errs      []string
		owned     int
		massPrune bool
	}{{
		name: "creates in dependency order",
		in: func() Input {
			return Input{Desired: desired(t, deployment("web", 1), service("web"), cmA, namespace("prod")), Namespaces: defaultNS()}
		},
		want: "create Namespace/prod; create ConfigMap/default/a; create Service/default/web; create Deployment/default/web",
	}, {
		name: "unchanged, updated, pruned in reverse order, kept",
		in: func() Input {
			return Input{
				Desired:    desired(t, cmA, configMap("b", "2")),
				Live:       liveMap(stored(t, cmA, fleet), stored(t, cmB, fleet)),
				Inventory:  []api.Object{stored(t, cmA, fleet), stored(t, cmB, fleet), stored(t, keep, fleet), stored(t, service("web"), fleet), stored(t, namespace("old"), fleet)},
				Namespaces: defaultNS(),
			}
		},
		want:  "unchanged ConfigMap/default/a; update ConfigMap/default/b; prune Service/default/web; keep ConfigMap/default/keep; prune Namespace/old",
		owned: 5,
	}, {
		name: "drift: the source declares what it did, the store differs",
		in: func() Input {
			d := desired(t, deployment("web", 2))
			live := stored(t, deployment("web", 5), fleet)
			return Input{
				Desired:    d,
				Live:       liveMap(live),
				Inventory:  []api.Object{live},
				Previous:   map[Key]api.Object{d[0].Key: d[0].Object},
				Namespaces: defaultNS(),
			}
		},
		want:  "update Deployment/default/web+drift(spec.replicas)",
		owned: 1,
	}, {
		name: "a changed manifest is no drift",
		in: func() Input {
			d := desired(t, deployment("web", 2))
			return Input{
				Desired:    d,
				Live:       liveMap(stored(t, deployment("web", 5), fleet)),
				Previous:   liveMap(desired(t, deployment("web", 5))[0].Object),
				Namespaces: defaultNS(),
			}
		},
		want: "update Deployment/default/web",
	}, {
		name: "adopts an object without owner",
		in: func() Input {
			return Input{Desired: desired(t, cmA), Live: liveMap(stored(t, cmA, "")), Namespaces: defaultNS()}
		},
		want: "update ConfigMap/default/a+adopt",
	}, {
		name: "refuses objects of other sources",
		in: func() Input {
			return Input{Desired: desired(t, cmA, cmB), Live: liveMap(stored(t, cmA, "api"), stored(t, cmB, "other")), Namespaces: defaultNS()}
		},
		errs: []string{
			`m.yaml:doc 0 (line 4): metadata.name: Forbidden: ConfigMap/default/a exists and is owned by source "api"`,
			`m.yaml:doc 1 (line 11): metadata.name: Forbidden: ConfigMap/default/b exists and is owned by source "other"`,
		},
	}, {
		name: "adopts the objects of a deleted source, not of one that exists",
		in: func() Input {
			return Input{Desired: desired(t, cmA, cmB), Live: liveMap(stored(t, cmA, "gone"), stored(t, cmB, "other")), Namespaces: defaultNS(),
				Gone: map[string]bool{"gone": true, "other": false}}
		},
		errs: []string{
			`m.yaml:doc 1 (line 11): metadata.name: Forbidden: ConfigMap/default/b exists and is owned by source "other" (annotation berth.dev/source); source "fleet" cannot apply it: remove it from one of the two sources, delete it so that "fleet" creates it, or, if "other" no longer declares it, hand it over as it runs with ` + "`kubectl annotate configmap b -n default berth.dev/source-`",
		},
	}, {
		name: "adopts the objects of a deleted source",
		in: func() Input {
			return Input{Desired: desired(t, cmA), Live: liveMap(stored(t, cmA, "gone")), Namespaces: defaultNS(), Gone: map[string]bool{"gone": true}}
		},
		want: "update ConfigMap/default/a+adopt(gone)",
	}, {
		name: "namespaces must exist, be in the revision, and not be going",
		in: func() Input {
			in := Input{Desired: desired(t, namespace("new"),
				strings.Replace(cmA, "name: a", "name: a\n  namespace: new", 1),
				strings.Replace(cmA, "name: a", "name: a\n  namespace: missing", 1),
				strings.Replace(cmA, "name: a", "name: a\n  namespace: gone", 1)), Namespaces: defaultNS()}
			in.Namespaces["gone"] = terminating
			return in
		},
		errs: []string{
			`m.yaml:doc 2 (line 18): metadata.namespace: Not found: "missing"`,
			`m.yaml:doc 3 (line 26): metadata.namespace: Forbidden: namespace "gone" is being deleted`,
		},
	}, {
		name: "objects a controller owns or that are going are not pruned",
		in: func() Input {
			going := stored(t, cmB, fleet)
			going.SetDeletionTimestamp(&metav1.Time{})
			return Input{Desired: desired(t, cmA), Live: liveMap(stored(t, cmA, fleet)), Inventory: []api.Object{stored(t, cmA, fleet), owned, going}, Namespaces: defaultNS()}
		},
		want:  "unchanged ConfigMap/default/a",
		owned: 1,
	}, {
		name: "pruning more than half is mass pruning",
		in: func() Input {
			return Input{Desired: desired(t, cmA), Live: liveMap(stored(t, cmA, fleet)),
				Inventory: []api.Object{stored(t, cmA, fleet), stored(t, cmB, fleet), stored(t, configMap("c", ""), fleet)}, Namespaces: defaultNS()}
		},
		want:      "unchanged ConfigMap/default/a; prune ConfigMap/default/c; prune ConfigMap/default/b",
		owned:     3,
		massPrune: true,
	}, {
		name: "pruning everything is mass pruning",
		in: func() Input {
			return Input{Inventory: []api.Object{stored(t, cmA, fleet)}}
		},
		want:      "prune ConfigMap/default/a",
		owned:     1,
		massPrune: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in()
			in.Source = fleet
			p := Diff(in)
			if len(tt.errs) > 0 || len(p.Errors) > 0 {
				if len(p.Errors) != len(tt.errs) {
					t.Fatalf("errors:\n%v\nwant %d", p.Errors, len(tt.errs))
				}
				for i, e := range p.Errors {
					if !strings.HasPrefix(e.Error(), tt.errs[i]) {
						t.Errorf("error %d:\n got %s\nwant %s…", i, e, tt.errs[i])
					}
				}
				if len(p.Steps) != 0 {
					t.Errorf("a rejected plan has steps: %s", summary(p))
				}
				return
			}
			if got := summary(p); got != tt.want {
				t.Errorf("plan\n got %s\nwant %s", got, tt.want)
			}
			if p.Owned != tt.owned || p.MassPrune() != tt.massPrune {
				t.Errorf("owned %d, mass prune %v; want %d, %v", p.Owned, p.MassPrune(), tt.owned, tt.massPrune)
			}
		})
	}
}

func TestMerge3(t *testing.T) {
	live := map[string]string{"a": "1", "b": "1", "c": "1"}
	desired := map[string]string{"a": "2"}
	prev := map[string]string{"a": "1", "b": "1"}
	got := merge3(live, desired, prev, true)
	if len(got) != 2 || got["a"] != "2" || got["c"] != "1" {
		t.Errorf("known previous: %v", got)
	}
	got = merge3(live, desired, nil, false)
	if len(got) != 3 || got["a"] != "2" || got["b"] != "1" {
		t.Errorf("unknown previous: %v", got)
	}
	if merge3(nil, nil, nil, false) != nil {
		t.Error("empty maps should merge to nil")
	}
}

func TestByRank(t *testing.T) {
	ns, cm, dep := api.KindOf(&api.Namespace{}), api.KindOf(&api.ConfigMap{}), api.KindOf(&api.Deployment{})
	step := func(k *api.Kind, name string) Step { return Step{Key: Key{Kind: k, Name: name}} }
	names := func(steps []Step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, kindName(s.Key.Kind)+"/"+s.Key.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []Step
		want []string
	}{
		{"empty", nil, nil},
		{"sorted already", []Step{step(ns, "a"), step(cm, "b"), step(dep, "c")}, []string{"Namespace/a", "ConfigMap/b", "Deployment/c"}},
		{"kinds apart, order kept within a kind", []Step{step(dep, "z"), step(cm, "y"), step(dep, "a"), step(ns, "n"), step(cm, "b")},
			[]string{"Namespace/n", "ConfigMap/y", "ConfigMap/b", "Deployment/z", "Deployment/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(byRank(tc.in)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
