package runtime

import "testing"

func TestIDRoundTrip(t *testing.T) {
	for _, id := range []ID{
		{PodUID: "0b6f-11", Name: "web", Attempt: 0},
		{PodUID: "u", Name: "init-db", Attempt: 12},
	} {
		got, err := ParseID(id.String())
		if err != nil || got != id {
			t.Errorf("ParseID(%q) = %+v, %v; want %+v", id.String(), got, err, id)
		}
	}
}

func TestParseIDRejects(t *testing.T) {
	for _, s := range []string{"", "uid", "uid/name", "/name/0", "uid//0", "uid/name/", "uid/name/x", "uid/name/-1"} {
		if id, err := ParseID(s); err == nil {
			t.Errorf("ParseID(%q) = %+v, want an error", s, id)
		}
	}
}
