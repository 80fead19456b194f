package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExamplesValidate runs `berth validate` over every folder under
// examples/, as a GitOps repository's CI would: each must be valid. The
// README tells users to edit examples/hello, so its manifests are read
// from the copy the end-to-end tests keep (test/e2e checks the copy
// against the committed example), never from the user's files.
func TestExamplesValidate(t *testing.T) {
	root := filepath.Join("..", "..", "examples")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		dir := filepath.Join(root, e.Name())
		manifests := dir
		if e.Name() == "hello" {
			manifests = filepath.Join("..", "..", "test", "e2e", "testdata", "examples", "hello")
		}
		t.Run(e.Name(), func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
				t.Errorf("examples/%s has no README.md", e.Name())
			}
			r := runBerth(t, "", "validate", "-f", manifests)
			if r.code != exitOK {
				t.Errorf("berth validate -f examples/%s: exit %d\n%s%s", e.Name(), r.code, r.stdout, r.stderr)
			}
		})
	}
	if n < 5 {
		t.Errorf("%d examples, want at least hello, guestbook, static-pods, multi-node and gitops", n)
	}
}
