package cri

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"
)

func TestParseRegistries(t *testing.T) {
	for _, tt := range []struct{ yaml, err string }{
		{"mirrors:\n  docker.io:\n    endpoint: [\"http://127.0.0.1:5000\"]\n", ""},
		{"mirrors:\n  \"*\":\n    endpoint: [\"https://mirror.example\"]\nconfigs:\n  mirror.example:\n    tls: {insecure_skip_verify: true}\n", ""},
		{"mirrors:\n  docker.io:\n    endpoint: [\"ftp://x\"]\n", `mirrors."docker.io".endpoint[0]: "ftp://x": want an http:// or https:// URL`},
		{"mirrors:\n  docker.io:\n    endpoints: [\"http://x\"]\n", `"mirrors"."docker.io"."endpoints": unknown field (want one of endpoint)`},
		{"mirrors:\n  \"bad host\":\n    endpoint: []\n", `mirrors."bad host": "bad host" is not a registry host[:port]`},
		{"configs:\n  r.example:\n    tls: {cert_file: /c.pem}\n", `configs."r.example".tls: cert_file and key_file go together`},
		{"mirrors: [1, 2]\n", "cannot unmarshal array"},
		{"configs:\n  r.example:\n    tls: {insecure: true}\n", `"configs"."r.example"."tls"."insecure": unknown field (want one of cert_file, key_file, ca_file, insecure_skip_verify)`},
		{"registry: {}\n", `"registry": unknown field (want one of mirrors, configs)`},
	} {
		_, err := ParseRegistries([]byte(tt.yaml))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q: %v, want %q", tt.yaml, err, tt.err)
		}
	}
}

// A mirror is a hosts.toml of the registry's with the mirror's endpoint
// first; a registry's TLS settings go with its host; credentials go into
// the config, which hosts.toml cannot hold.
func TestRegistriesFiles(t *testing.T) {
	r, err := ParseRegistries([]byte(`mirrors:
  docker.io:
    endpoint: ["http://127.0.0.1:5000/"]
  "*":
    endpoint: ["https://mirror.example"]
configs:
  mirror.example:
    tls: {ca_file: /ca.pem, cert_file: /c.pem, key_file: /k.pem}
    auth: {username: u, password: "p\"w"}
  private.example:
    tls: {insecure_skip_verify: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	files := r.HostsFiles()
	want := map[string]string{
		"docker.io": hostsMarker + "server = \"https://registry-1.docker.io\"\n\n[host.\"http://127.0.0.1:5000\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
		"_default":  hostsMarker + "\n[host.\"https://mirror.example\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/ca.pem\"\n  client = [[\"/c.pem\", \"/k.pem\"]]\n",
		// A host's TLS settings hold when it is pulled from by name too.
		"mirror.example":  hostsMarker + "server = \"https://mirror.example\"\n\n[host.\"https://mirror.example\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = \"/ca.pem\"\n  client = [[\"/c.pem\", \"/k.pem\"]]\n",
		"private.example": hostsMarker + "server = \"https://private.example\"\n\n[host.\"https://private.example\"]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n",
	}
	if len(files) != len(want) {
		t.Errorf("files %v", files)
	}
	for d, w := range want {
		if files[d] != w {
			t.Errorf("%s:\n%s\nwant:\n%s", d, files[d], w)
		}
	}
	if got := r.authConfig(); got != "\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"mirror.example\".auth]\n  username = \"u\"\n  password = \"p\\\"w\"\n" {
		t.Errorf("auth config %q", got)
	}
}

func FuzzParseRegistries(f *testing.F) {
	f.Add([]byte("mirrors:\n  docker.io:\n    endpoint: [\"http://127.0.0.1:5000\"]\n"))
	f.Add([]byte("configs:\n  r.example:\n    auth: {username: u}\n    tls: {cert_file: a, key_file: b}\n"))
	f.Add([]byte("mirrors: {\"*\": {endpoint: [\"https://m\"]}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRegistries(b)
		if err != nil {
			return
		}
		// What was accepted makes files that quote what they hold.
		for _, content := range r.HostsFiles() {
			if !strings.HasPrefix(content, hostsMarker) {
				t.Fatalf("hosts file %q", content)
			}
		}
		r.authConfig()
	})
}

func tarOf(t testing.TB, names ...string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, n := range names {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
		tw.Write([]byte("{}"))
	}
	tw.Close()
	return b.Bytes()
}

func TestImageArchiveFormat(t *testing.T) {
	for _, tt := range []struct {
		data      []byte
		want, err string
	}{
		{tarOf(t, "manifest.json", "abc/layer.tar"), FormatDockerArchive, ""},
		{tarOf(t, "./oci-layout", "./index.json", "blobs/sha256/x"), FormatOCIArchive, ""},
		{tarOf(t, "index.json"), "", "not an image archive"},
		{tarOf(t), "", "an empty archive"},
		{[]byte("this is no tar, it is text long enough to fill a header? no; it is not. " + strings.Repeat("x", 600)), "", "not a tar archive"},
	} {
		got, err := ImageArchiveFormat(bytes.NewReader(tt.data))
		if got != tt.want || (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: %q, %v; want %q, %q", tt.data[:min(len(tt.data), 20)], got, err, tt.want, tt.err)
		}
	}
}

func FuzzImageArchiveFormat(f *testing.F) {
	f.Add(tarOf(f, "manifest.json"))
	f.Add(tarOf(f, "oci-layout", "index.json"))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		format, err := ImageArchiveFormat(bytes.NewReader(b))
		if (err == nil) == (format == "") {
			t.Fatalf("format %q with error %v", format, err)
		}
	})
}
