package source

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want Spec
	}{
		{"./deploy", Spec{Name: "deploy", Type: TypeDir, URL: filepath.Join(wd, "deploy"), Interval: DefaultDirInterval}},
		{"/srv/manifests/", Spec{Name: "manifests", Type: TypeDir, URL: "/srv/manifests", Interval: DefaultDirInterval}},
		{"/srv/app.yaml", Spec{Name: "app.yaml", Type: TypeDir, URL: "/srv/app.yaml", Interval: DefaultDirInterval}},
		{"name=web,./deploy", Spec{Name: "web", Type: TypeDir, URL: filepath.Join(wd, "deploy"), Interval: DefaultDirInterval}},
		{"name=web,interval=5s,/srv/x", Spec{Name: "web", Type: TypeDir, URL: "/srv/x", Interval: 5 * time.Second}},
		{"/srv/a,b", Spec{Name: "a-b", Type: TypeDir, URL: "/srv/a,b", Interval: DefaultDirInterval}},
		{"/srv/My_Apps", Spec{Name: "my-apps", Type: TypeDir, URL: "/srv/My_Apps", Interval: DefaultDirInterval}},
		{"git+https://github.com/org/fleet.git", Spec{Name: "fleet", Type: TypeGit, URL: "https://github.com/org/fleet.git", Interval: DefaultGitInterval}},
		{"git+https://github.com/org/fleet.git?ref=main&path=clusters/prod/&interval=30s&name=prod",
			Spec{Name: "prod", Type: TypeGit, URL: "https://github.com/org/fleet.git", Ref: "main", Path: "clusters/prod", Interval: 30 * time.Second}},
		{"git+https://git.example.com/fleet?username=bot&password-file=/run/token",
			Spec{Name: "fleet", Type: TypeGit, URL: "https://git.example.com/fleet", Interval: DefaultGitInterval,
				Options: map[string]string{OptionUsername: "bot", OptionPasswordFile: "/run/token"}}},
		{"git+ssh://git@github.com/org/fleet.git?ref=v1.2.0&ssh-key-file=/k&known-hosts-file=/kh",
			Spec{Name: "fleet", Type: TypeGit, URL: "ssh://git@github.com/org/fleet.git", Ref: "v1.2.0", Interval: DefaultGitInterval,
				Options: map[string]string{OptionSSHKeyFile: "/k", OptionKnownHostsFile: "/kh"}}},
		{"git+ssh://git@host:2222/fleet.git?insecure-ignore-host-key=1",
			Spec{Name: "fleet", Type: TypeGit, URL: "ssh://git@host:2222/fleet.git", Interval: DefaultGitInterval,
				Options: map[string]string{OptionInsecureIgnoreHostKey: "true"}}},
		{"git+file:///srv/git/fleet.git?ref=0123456789abcdef0123456789abcdef01234567&allowMassPrune=true",
			Spec{Name: "fleet", Type: TypeGit, URL: "file:///srv/git/fleet.git", Ref: "0123456789abcdef0123456789abcdef01234567", Interval: DefaultGitInterval,
				Options: map[string]string{OptionAllowMassPrune: "true"}}},
		{"GIT+HTTP://localhost:8080/repo.git?path=./a//b/", Spec{Name: "repo", Type: TypeGit, URL: "http://localhost:8080/repo.git", Path: "a/b", Interval: DefaultGitInterval}},
		{"git+file:///srv/git/fleet.git?path=/", Spec{Name: "fleet", Type: TypeGit, URL: "file:///srv/git/fleet.git", Interval: DefaultGitInterval}},
		{"https://example.com/manifests/app.yaml", Spec{Name: "app.yaml", Type: TypeHTTP, URL: "https://example.com/manifests/app.yaml", Interval: DefaultHTTPInterval}},
		{"https://example.com/", Spec{Name: "example.com", Type: TypeHTTP, URL: "https://example.com/", Interval: DefaultHTTPInterval}},
		{"http://example.com/x.yaml?token=abc&interval=1m&ref=keep&name=x&b=2",
			Spec{Name: "x", Type: TypeHTTP, URL: "http://example.com/x.yaml?token=abc&ref=keep&b=2", Interval: time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in, want string // want: a part of the message
	}{
		{"", "empty"},
		{"ftp://example.com/x", `unsupported scheme "ftp"`},
		{"file:///srv/x", `unsupported scheme "file"`},
		{"git+ftp://example.com/x", `unsupported git scheme "git+ftp"`},
		{"git+https:///x.git", "has no host"},
		{"git+https://github.com", "no repository path"},
		{"git+file://srv/git/x.git", "three slashes"},
		{"git+file://relative", "three slashes"},
		{"git+file:///", "absolute repository path"},
		{"git+https://h/x.git?branch=main", `unknown parameter "branch"`},
		{"git+https://h/x.git?ref=a&ref=b", `"ref" given twice`},
		{"git+https://h/x.git?ref=", "ref= is empty"},
		{"git+https://h/x.git?ref=a..b", `ref "a..b"`},
		{"git+https://h/x.git?ref=a%20b", "not allowed in a ref"},
		{"git+https://h/x.git?path=../etc", "climbs out"},
		{"git+https://h/x.git?interval=soon", `interval "soon": not a duration`},
		{"git+https://h/x.git?interval=-1m", "must be positive"},
		{"git+https://h/x.git?interval=0s", "must be positive"},
		{"git+https://h/x.git?name=Bad_Name", `name "Bad_Name"`},
		{"git+https://h/x.git?ssh-key-file=/k", "ssh-key-file= needs a git+ssh:// URL"},
		{"git+ssh://h/x.git?password-file=/p", "password-file= needs a git+https://"},
		{"git+file:///x.git?username=u", "username= needs a git+https://"},
		{"git+ssh://h/x.git?insecure-ignore-host-key=maybe", "want true or false"},
		{"git+https://h/x.git?username=", "username= is empty"},
		{"git+https://h/x.git#main", "fragment #main"},
		{"git+https://h/%zz", "invalid URL"},
		{"http:///x.yaml", "has no host"},
		{"http://h/x.yaml?interval=1", "not a duration"},
		{"name=web", "no path after name="},
		{"name=web,", "no path"},
		{"name=a,name=b,/x", "name= given twice"},
		{"/", "cannot derive a source name"},
		{"https://h/?name=", `name ""`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded; want an error with %q", tt.in, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %q; want it to say %q", tt.in, err, tt.want)
			}
			if !strings.Contains(err.Error(), "source ") {
				t.Errorf("Parse(%q) = %q; want it to name the value", tt.in, err)
			}
		})
	}
}
