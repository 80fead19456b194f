package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/testtool"
)

// Each example's README is run as written, so that the two cannot drift.
// The convention (examples/README.md says it for authors):
//
//   - A fenced block whose info string is `sh` is run, in order, by one
//     bash with `set -e`, from a directory laid out as the repository's
//     root: `./berth` is the binary the tests built (a line
//     `go build -o berth ./cmd/berth` is skipped for it) and `examples/`
//     holds the examples. `examples/hello` there is the copy under
//     testdata/examples/hello, since the README tells users to edit theirs.
//   - A block whose info string is `sh background` is what a user runs in
//     a terminal of its own (a server, an agent): it is started in the
//     background, and the next `sh` block is tried again, once a second for
//     up to two minutes, until it succeeds, as a user tries again while the
//     server comes up.
//   - A `text` block lists lines the blocks before it print: each line,
//     trimmed, must appear in their output.
//   - Other blocks (`yaml`, `console`, no info string) are not run.
//
// Everything runs in new user, network and PID namespaces: loopback and a
// veth pair holding 198.18.0.1, the only non-loopback address and so the
// node's, are all the network there is, so the README's fixed ports clash
// with nothing on the machine; and when the script ends the namespace's
// processes, pods included, end with it. So the README tests share
// nothing, and run in parallel with each other.

// readmeBlock is one fenced code block of a README.
type readmeBlock struct {
	info string // the info string after the fence, trimmed
	body string
	line int // where the fence opens, 1-based
}

// readmeBlocks returns the fenced code blocks of a markdown text.
func readmeBlocks(text string) []readmeBlock {
	var blocks []readmeBlock
	var cur *readmeBlock
	var body []string
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &readmeBlock{info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 1}
			body = nil
		case cur != nil && trimmed == "```":
			cur.body = strings.Join(body, "\n")
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body = append(body, l)
		}
	}
	return blocks
}

// readmeScript turns a README's blocks into one bash script, and returns
// the lines its text blocks expect.
func readmeScript(blocks []readmeBlock) (string, []string) {
	var b strings.Builder
	var expect []string
	retryNext := false
	for i, bl := range blocks {
		var lines []string
		for _, l := range strings.Split(bl.body, "\n") {
			if strings.TrimSpace(l) == "go build -o berth ./cmd/berth" {
				continue
			}
			lines = append(lines, l)
		}
		body := strings.Join(lines, "\n")
		switch bl.info {
		case "sh":
			fmt.Fprintf(&b, "echo '### block %d (README line %d)'\n", i, bl.line)
			if retryNext {
				fmt.Fprintf(&b, "n=0\nuntil (\n%s\n); do\n  n=$((n+1)); [ $n -lt 120 ] || { echo 'block %d never succeeded'; exit 1; }; sleep 1\ndone\n", body, i)
				retryNext = false
			}
			b.WriteString(body + "\n")
		case "sh background":
			fmt.Fprintf(&b, "echo '### block %d (README line %d), in the background'\n(\n%s\n) &\n", i, bl.line, body)
			retryNext = true
		case "text":
			for _, l := range strings.Split(bl.body, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					expect = append(expect, l)
				}
			}
		}
	}
	return b.String(), expect
}

func TestReadmeBlocks(t *testing.T) {
	blocks := readmeBlocks("intro\n\n```sh\n./berth get pods\n```\n\n```yaml\nkind: Pod\n```\n\n  ```sh background\n  ./berth server\n  ```\n```text\n  hello\n```\n")
	want := []readmeBlock{{"sh", "./berth get pods", 3}, {"yaml", "kind: Pod", 7}, {"sh background", "  ./berth server", 11}, {"text", "  hello", 14}}
	if fmt.Sprint(blocks) != fmt.Sprint(want) {
		t.Fatalf("blocks %v, want %v", blocks, want)
	}
	script, expect := readmeScript([]readmeBlock{{info: "sh background", body: "go build -o berth ./cmd/berth\n./berth server"}, {info: "sh", body: "./berth get pods"}, {info: "text", body: "a\n\n b "}})
	if strings.Contains(script, "go build") || !strings.Contains(script, "(\n./berth server\n) &") || !strings.Contains(script, "until (\n./berth get pods\n); do") {
		t.Errorf("script:\n%s", script)
	}
	if fmt.Sprint(expect) != "[a b]" {
		t.Errorf("expect %q", expect)
	}
}

// leftMarker starts the list of the processes a README left running,
// which readmeLeft appends for a README that says it stops everything.
const leftMarker = "### left running"

// readmeLeft, run at the end of a script, waits for its background jobs
// and lists every process of the namespace but itself.
const readmeLeft = "wait\necho '" + leftMarker + "'\nps -e -o pid=,args= | grep -v -e ' ps -e' -e ' grep -v' -e \" $$ \" || :\n"

// runExampleREADME runs examples/NAME/README.md as the convention above
// says, and checks its text blocks against what it printed. With
// stopsEverything, the README says its last block stops every process it
// started, pods included, and the test checks that none is left.
func runExampleREADME(t *testing.T, name string, timeout time.Duration, stopsEverything bool) string {
	t.Helper()
	for _, tool := range []string{"bash", "unshare", "ip", "curl", "ps"} {
		testtool.Need(t, tool)
	}
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "--net", "true").CombinedOutput(); err != nil {
		if os.Getenv(testtool.RequireEnv) == "1" {
			t.Fatalf("user and network namespaces are required (%s=1): %v\n%s", testtool.RequireEnv, err, out)
		}
		t.Skipf("no user and network namespaces here: %v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "examples", name, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, expect := readmeScript(readmeBlocks(string(readme)))

	work := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(work, "berth")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(work, "examples"), os.DirFS(filepath.Join("..", "..", "examples"))); err != nil {
		t.Fatal(err)
	}
	hello := filepath.Join(work, "examples", "hello")
	if err := os.RemoveAll(hello); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(hello, os.DirFS(filepath.Join("testdata", "examples", "hello"))); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	full := "set -euo pipefail\n" +
		"ip link set lo up\n" +
		"ip link add berth0 type veth peer name berth1\n" +
		"ip addr add 198.18.0.1/30 dev berth0\n" +
		"ip link set berth0 up\nip link set berth1 up\n" +
		"cd " + work + "\n" + script
	if stopsEverything {
		full += readmeLeft
	}
	if err := os.WriteFile(filepath.Join(work, "readme.sh"), []byte(full), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// --kill-child: should unshare itself be killed (the timeout), the
	// namespace's first process, and so all of them, die with it.
	cmd := exec.CommandContext(ctx, "unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child", "--mount-proc",
		"bash", filepath.Join(work, "readme.sh"))
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = work
	// The user's environment, but none of their kubeconfigs or data dir.
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG=", "BERTH_KUBECONFIG=", "XDG_DATA_HOME="+filepath.Join(home, "data"), "BERTH="+bin,
		"TMPDIR="+t.TempDir()) // what the README's mktemp makes goes with the test
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err != nil {
		t.Fatalf("examples/%s/README.md: %v\n%s", name, err, out.String())
	}
	if stopsEverything {
		_, left, _ := strings.Cut(out.String(), leftMarker+"\n")
		if strings.TrimSpace(left) != "" {
			t.Errorf("examples/%s/README.md stops everything, but left running:\n%s", name, left)
		}
	}
	var outLines []string
	for _, l := range strings.Split(out.String(), "\n") {
		outLines = append(outLines, strings.TrimSpace(l))
	}
	for _, want := range expect {
		found := false
		for _, l := range outLines {
			if strings.Contains(l, want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("examples/%s/README.md: no line holds %q; it printed:\n%s", name, want, out.String())
		}
	}
	return out.String()
}

func TestExampleHelloREADME(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "dig")
	runExampleREADME(t, "hello", 3*time.Minute, false)
}

func TestExampleGuestbookREADME(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "dig")
	runExampleREADME(t, "guestbook", 3*time.Minute, false)
}

func TestExampleStaticPodsREADME(t *testing.T) {
	t.Parallel()
	runExampleREADME(t, "static-pods", 2*time.Minute, false)
}

func TestExampleMultiNodeREADME(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "dig")
	runExampleREADME(t, "multi-node", 3*time.Minute, true)
}

func TestExampleGitOpsREADME(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"git", "openssl"} {
		testtool.Need(t, tool)
	}
	runExampleREADME(t, "gitops", 3*time.Minute, true)
}

// TestHelloCopyIsCommittedExample keeps testdata/examples/hello, which the
// tests read, the same as examples/hello as committed. It reads the
// committed files from git, not the working tree: the README tells users
// to edit examples/hello, and their edits must not fail a test.
func TestHelloCopyIsCommittedExample(t *testing.T) {
	git := testtool.Need(t, "git")
	copies, err := os.ReadDir(filepath.Join("testdata", "examples", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(git, "rev-parse", "--verify", "-q", "HEAD").Run(); err != nil {
		t.Skipf("not in a git checkout with a commit: %v", err)
	}
	for _, c := range copies {
		copied, err := os.ReadFile(filepath.Join("testdata", "examples", "hello", c.Name()))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := exec.Command(git, "show", "HEAD:./../../examples/hello/"+c.Name()).Output()
		if err != nil {
			t.Fatalf("git show examples/hello/%s: %v", c.Name(), err)
		}
		if !bytes.Equal(copied, committed) {
			t.Errorf("test/e2e/testdata/examples/hello/%s differs from the committed examples/hello/%s: copy it over", c.Name(), c.Name())
		}
	}
}
