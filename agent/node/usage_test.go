package node

import "testing"

func TestParseProcStat(t *testing.T) {
	stat := "cpu  100 20 30 1000 50 5 6 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1\n"
	if got, err := parseProcStat([]byte(stat)); err != nil || got != (100+20+30+5+6+7)*10_000_000 {
		t.Errorf("busy CPU %d, %v", got, err)
	}
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2 3\n", "cpu a b c d e f g h\n"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzProcStat reads arbitrary /proc/stat contents: never a panic.
func FuzzProcStat(f *testing.F) {
	f.Add([]byte("cpu  100 20 30 1000 50 5 6 7 0 0\n"))
	f.Add([]byte("cpu -1 -2 -3 -4 -5 -6 -7 -8\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, stat []byte) {
		_, _ = parseProcStat(stat)
	})
}
