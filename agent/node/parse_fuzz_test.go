package node

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-dev/berth/agent/eviction"
	"github.com/berth-dev/berth/api"
)

// The flag parsers take whatever an operator types. Each fuzz target
// checks that a parser never panics, that an error quotes the item it
// rejects (an item of the input), and that what it accepts, written back
// in the flag's syntax, parses to the same value.

// The flag parsers take whatever an operator types. Each fuzz target
// checks that a parser never panics, that an error quotes the item it
// rejects (an item of the input), and that what it accepts, written back
// in the flag's syntax, parses to the same value.

// quotedItem is the item an error of the form `<what> "<item>": …` names;
// ok is false when the error does not have that form.
func quotedItem(msg, what string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, what+" ")
	if !ok {
		return "", false
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", false
	}
	item, err := strconv.Unquote(q)
	return item, err == nil
}

// checkNamesItem fails unless err names, quoted, an item of the
// comma-separated input s.
func checkNamesItem(t *testing.T, s, what string, err error) {
	t.Helper()
	item, ok := quotedItem(err.Error(), what)
	if !ok {
		t.Fatalf("%q: error %q does not begin with %s and the quoted item", s, err, what)
	}
	if item == "" || !strings.Contains(s, item) || strings.Contains(item, ",") {
		t.Fatalf("%q: error %q names %q, not an item of the input", s, err, item)
	}
}

func FuzzParseCapacity(f *testing.F) {
	for _, seed := range []string{
		"cpu=4,memory=8Gi,pods=110", "ephemeral-storage=20Gi", "", " , ,", "cpu=4,cpu=2", "cpu", "gpu=1",
		"pods=1.5", "memory=-1", "cpu=1e3", "memory=9223372036854775807", "cpu=0.0001", "pods=1k", "cpu= 2 ",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseCapacity(s)
		if err != nil {
			checkNamesItem(t, s, "capacity", err)
			return
		}
		var items []string
		for _, name := range slices.Sorted(maps.Keys(got)) {
			q := got[name]
			if q.Sign() < 0 {
				t.Fatalf("%q: %s is negative: %s", s, name, q.String())
			}
			items = append(items, string(name)+"="+q.String())
		}
		again, err := ParseCapacity(strings.Join(items, ","))
		if err != nil {
			t.Fatalf("%q: written back as %q, it fails: %v", s, strings.Join(items, ","), err)
		}
		if len(again) != len(got) {
			t.Fatalf("%q: round trip gives %v, want %v", s, again, got)
		}
		for name, q := range got {
			if r, ok := again[name]; !ok || r.Cmp(q) != 0 {
				t.Fatalf("%q: %s round trip gives %s, want %s", s, name, r.String(), q.String())
			}
		}
		// The node's allocatable is derived from it; it must not go below zero.
		for name, q := range Allocatable(got, nil) {
			if q.Sign() < 0 {
				t.Fatalf("%q: allocatable %s is negative: %s", s, name, q.String())
			}
		}
	})
}

func FuzzParseLabels(f *testing.F) {
	for _, seed := range []string{
		"zone=a,disk=ssd", "berth.dev/role=edge", "k=", "=v", "k=v,k=w", "k", "a/b/c=d", "k=v=w", "k=" + strings.Repeat("v", 64),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseLabels(s)
		if err != nil {
			checkNamesItem(t, s, "label", err)
			return
		}
		var items []string
		for _, k := range slices.Sorted(maps.Keys(got)) {
			items = append(items, k+"="+got[k])
		}
		again, err := ParseLabels(strings.Join(items, ","))
		if err != nil || !maps.Equal(again, got) {
			t.Fatalf("%q: round trip of %v gives %v, %v", s, got, again, err)
		}
	})
}

func FuzzParseTaints(f *testing.F) {
	for _, seed := range []string{
		"dedicated=edge:NoSchedule,gpu:NoExecute", "k:PreferNoSchedule", "k=v", "k=v:Never", "k:NoSchedule,k:NoSchedule",
		"k:NoSchedule,k=v:NoExecute", ":NoSchedule", "k=v:w:NoSchedule", "a/b=c:NoSchedule",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTaints(s)
		if err != nil {
			checkNamesItem(t, s, "taint", err)
			return
		}
		items := make([]string, len(got))
		for i, tn := range got {
			items[i] = tn.Key + "=" + tn.Value + ":" + string(tn.Effect)
		}
		again, err := ParseTaints(strings.Join(items, ","))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("%q: round trip of %v gives %v, %v", s, got, again, err)
		}
		for _, tn := range got {
			switch tn.Effect {
			case api.TaintEffectNoSchedule, api.TaintEffectPreferNoSchedule, api.TaintEffectNoExecute:
			default:
				t.Fatalf("%q: effect %q accepted", s, tn.Effect)
			}
		}
	})
}

func FuzzParseThresholds(f *testing.F) {
	for _, seed := range []string{
		eviction.DefaultHard, "memory.available<1Gi", "nodefs.available<0%", "nodefs.available<100%", "memory.available<7%",
		"memory.available<101%", "memory.available<NaN%", "memory.available<-1", "memory.available>1Gi", "pid.available<10",
		"memory.available<1Gi,memory.available<2Gi", "nodefs.available<0x1p-2%", "nodefs.available<1e400%", "memory.available<1E18",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := eviction.ParseThresholds(s)
		if err != nil {
			checkNamesItem(t, s, "eviction threshold", err)
			return
		}
		items := make([]string, len(got))
		for i, th := range got {
			items[i] = th.String()
			if th.Quantity == nil && (th.Percentage < 0 || th.Percentage > 1 || math.IsNaN(th.Percentage)) {
				t.Fatalf("%q: percentage %v accepted", s, th.Percentage)
			}
			for _, capacity := range []int64{0, 1 << 30, math.MaxInt64 / 2} {
				if b := th.Bytes(capacity); b < 0 {
					t.Fatalf("%q: %s of %d bytes is %d", s, th, capacity, b)
				}
			}
		}
		again, err := eviction.ParseThresholds(strings.Join(items, ","))
		if err != nil || len(again) != len(got) {
			t.Fatalf("%q: written back as %q: %v, %v", s, strings.Join(items, ","), again, err)
		}
		for i, th := range got {
			a := again[i]
			switch {
			case a.Signal != th.Signal:
			case th.Quantity != nil && a.Quantity != nil && a.Quantity.Cmp(*th.Quantity) == 0:
				continue
			case th.Quantity == nil && a.Quantity == nil && math.Abs(a.Percentage-th.Percentage) <= 1e-12:
				continue
			}
			t.Fatalf("%q: %s written back as %q reads %s", s, th, items[i], a)
		}
	})
}
