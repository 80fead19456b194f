package cri

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Formats of image archives.
const (
	FormatDockerArchive = "docker-archive"
	FormatOCIArchive    = "oci-archive"
)

// ImageArchiveFormat reads a tar stream to its end and says which kind of
// image archive it is: docker-archive (a manifest.json, as docker save
// writes) or oci-archive (an oci-layout and an index.json).
func ImageArchiveFormat(r io.Reader) (string, error) {
	tr := tar.NewReader(r)
	seen := map[string]bool{}
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("not a tar archive: %w", err)
		}
		n++
		seen[strings.TrimPrefix(filepathClean(h.Name), "./")] = true
	}
	switch {
	case n == 0:
		return "", errors.New("an empty archive")
	case seen["manifest.json"]:
		return FormatDockerArchive, nil
	case seen["index.json"] && seen["oci-layout"]:
		return FormatOCIArchive, nil
	}
	return "", errors.New("not an image archive: neither a manifest.json (docker-archive) nor an oci-layout and index.json (oci-archive)")
}

func filepathClean(n string) string { return filepath.Clean("/" + n)[1:] }

// CheckImageArchive says which kind of image archive the file is, or what
// is wrong with it, naming it.
func CheckImageArchive(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	format, err := ImageArchiveFormat(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return format, nil
}

// ImportImages imports image archives into the containerd at socket,
// where its CRI plugin finds them (namespace k8s.io), with the ctr that
// containerd ships: containerd's import is not part of the CRI. Each file
// is checked first; every file is tried, and the errors name them.
func ImportImages(ctx context.Context, socket string, files ...string) error {
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		return fmt.Errorf("import images: %w (ctr comes with containerd)", err)
	}
	var errs []error
	for _, f := range files {
		if _, err := CheckImageArchive(f); err != nil {
			errs = append(errs, err)
			continue
		}
		out, err := exec.CommandContext(ctx, ctr, "-a", socket, "-n", "k8s.io", "images", "import", f).CombinedOutput()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: ctr images import: %v: %s", f, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// importDir imports every *.tar of dir, sorted; a missing dir is none.
func importDir(ctx context.Context, socket, dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".tar") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil
	}
	return ImportImages(ctx, socket, files...)
}
