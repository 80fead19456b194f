package eviction

import (
	"math"
	"strconv"
	"strings"
	"testing"
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

func FuzzParseThresholds(f *testing.F) {
	for _, seed := range []string{
		DefaultHard, "memory.available<1Gi", "nodefs.available<0%", "nodefs.available<100%", "memory.available<7%",
		"memory.available<101%", "memory.available<NaN%", "memory.available<-1", "memory.available>1Gi", "pid.available<10",
		"memory.available<1Gi,memory.available<2Gi", "nodefs.available<0x1p-2%", "nodefs.available<1e400%", "memory.available<1E18",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseThresholds(s)
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
		again, err := ParseThresholds(strings.Join(items, ","))
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
