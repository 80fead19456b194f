package bolt

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/store"
)

// The crash test runs this test binary as a child that commits
// transactions as fast as it can from several goroutines (so group commit
// is exercised) and prints each one once it is acknowledged. The parent
// kills it with SIGKILL at a random moment, reopens the file and checks
// that every acknowledged transaction is there whole and that no
// transaction is there in part.
//
// Transaction i of writer g creates configmaps g-i-a, g-i-b and g-i-c and
// sets configmap counter-g to i, all at once.

const (
	crashEnv     = "BERTH_CRASH_CHILD_DB"
	crashWriters = 4
)

func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("runs only as the crash test's child")
	}
	s := open(t, path)
	ctx := context.Background()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Go(func() {
			i := 0
			if c, err := s.Get(cmKind, "default", fmt.Sprintf("counter-%d", g)); err == nil {
				i, _ = strconv.Atoi(c.GetAnnotations()["i"])
			}
			for {
				i++
				rev, err := s.Txn(ctx, func(tx *store.Txn) error { return writeTxn(tx, g, i) })
				if err != nil {
					fmt.Fprintln(os.Stderr, "txn:", err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %d %d %d\n", g, i, rev)
				out.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func writeTxn(tx *store.Txn, g, i int) error {
	for _, part := range []string{"a", "b", "c"} {
		if _, err := tx.Create(configMap(fmt.Sprintf("%d-%d-%s", g, i, part), map[string]string{"payload": strings.Repeat("x", 200)})); err != nil {
			return err
		}
	}
	counter := configMap(fmt.Sprintf("counter-%d", g), nil)
	counter.Annotations = map[string]string{"i": strconv.Itoa(i)}
	if _, err := tx.Get(cmKind, "default", counter.Name); store.IsNotFound(err) {
		_, err := tx.Create(counter)
		return err
	}
	_, err := tx.Update(counter)
	return err
}

type ack struct{ g, i int }

func TestCrashKeepsEveryAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test is long")
	}
	path := filepath.Join(t.TempDir(), "state.db")
	rounds := 12
	acked := map[ack]uint64{}
	var maxRev uint64
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill once the child has acknowledged a random number of
		// transactions, so the kill lands in the middle of its writing.
		target := 20 + rand.IntN(400)
		lines := bufio.NewScanner(stdout)
		n := 0
		for lines.Scan() {
			var a ack
			var rev uint64
			if _, err := fmt.Sscanf(lines.Text(), "ack %d %d %d", &a.g, &a.i, &rev); err != nil {
				continue
			}
			acked[a] = rev
			maxRev = max(maxRev, rev)
			if n++; n == target {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		// Acknowledgements printed before the kill still count.
		for lines.Scan() {
			var a ack
			var rev uint64
			if _, err := fmt.Sscanf(lines.Text(), "ack %d %d %d", &a.g, &a.i, &rev); err == nil {
				acked[a] = rev
				maxRev = max(maxRev, rev)
			}
		}
		cmd.Wait()
		if n < target {
			t.Fatalf("round %d: child stopped after %d acknowledgements", round, n)
		}
		verify(t, path, acked, maxRev)
	}
	t.Logf("%d rounds, %d acknowledged transactions, revision %d", rounds, len(acked), maxRev)
}

func verify(t *testing.T, path string, acked map[ack]uint64, maxRev uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var b *Backend
	var err error
	for {
		// The killed child's lock is released as the kernel reaps it.
		if b, err = Open(path); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.New(b, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Revision() < maxRev {
		t.Fatalf("revision %d is older than the acknowledged %d", s.Revision(), maxRev)
	}
	snap := s.Snapshot()
	for g := range crashWriters {
		last := 0
		if c, err := snap.Get(cmKind, "default", fmt.Sprintf("counter-%d", g)); err == nil {
			last, _ = strconv.Atoi(c.GetAnnotations()["i"])
		}
		// Every transaction up to the counter is whole; none after it is
		// there at all.
		for i := 1; i <= last+5; i++ {
			for _, part := range []string{"a", "b", "c"} {
				_, err := snap.Get(cmKind, "default", fmt.Sprintf("%d-%d-%s", g, i, part))
				switch {
				case i <= last && err != nil:
					t.Fatalf("writer %d transaction %d (counter %d): %s missing: %v", g, i, last, part, err)
				case i > last && err == nil:
					t.Fatalf("writer %d transaction %d beyond counter %d is partly there (%s)", g, i, last, part)
				}
			}
		}
		for a := range acked {
			if a.g == g && a.i > last {
				t.Fatalf("acknowledged transaction %d of writer %d lost (counter %d)", a.i, g, last)
			}
		}
	}
}
