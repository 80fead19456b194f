package pods

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two", "EMPTY": ""}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "1"},
		{"x$(A)y$(B)z", "x1ytwoz"},
		{"$(EMPTY)!", "!"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$1"},
		{"$$", "$"},
		{"$A", "$A"},
		{"100$", "100$"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"a$(A)$(A)", "a11"},
		{"$(A)$", "1$"},
	}
	for _, tt := range tests {
		if got := expandVars(tt.in, vars); got != tt.want {
			t.Errorf("expandVars(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func envPod() *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u-1"},
		Spec:       api.PodSpec{NodeName: "n1", ServiceAccountName: "default"},
	}
}

func testRefs() *fakeRefs {
	return &fakeRefs{
		configMaps: map[string]*api.ConfigMap{"shop/cfg": {Data: map[string]string{"MODE": "fast", "bad key": "x", "LEVEL": "3"}}},
		secrets:    map[string]*api.Secret{"shop/creds": {Data: map[string][]byte{"password": []byte("s3cret")}}},
	}
}

func TestContainerEnv(t *testing.T) {
	yes := true
	tests := []struct {
		name    string
		c       api.Container
		refs    RefResolver
		want    []string // in order
		wantErr string
	}{
		{
			name: "values expand earlier vars only",
			c: api.Container{Env: []api.EnvVar{
				{Name: "A", Value: "a"}, {Name: "B", Value: "$(A)-$(C)"}, {Name: "C", Value: "c"},
			}},
			want: []string{"A=a", "B=a-$(C)", "C=c", "PATH=" + defaultPath},
		},
		{
			name: "downward API",
			c: api.Container{Env: []api.EnvVar{
				{Name: "NAME", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "NS", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "UID", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
				{Name: "NODE", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "SA", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
				{Name: "POD_IP", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "HOST_IP", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
				{Name: "ADDR", Value: "$(POD_IP):8080"},
			}},
			want: []string{"NAME=web", "NS=shop", "UID=u-1", "NODE=n1", "SA=default", "POD_IP=10.0.0.7", "HOST_IP=10.0.0.7", "ADDR=10.0.0.7:8080", "PATH=" + defaultPath},
		},
		{
			name: "configMap and secret keys",
			c: api.Container{Env: []api.EnvVar{
				{Name: "MODE", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.ConfigMapKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
				{Name: "PW", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "creds"}, Key: "password"}}},
				{Name: "OPT", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "nope"}, Key: "k", Optional: &yes}}},
				{Name: "PATH", Value: "/opt/bin"},
			}},
			want: []string{"MODE=fast", "PW=s3cret", "PATH=/opt/bin"},
		},
		{
			name: "envFrom with prefix skips invalid keys, env wins",
			c: api.Container{
				EnvFrom: []api.EnvFromSource{{Prefix: "APP_", ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}}},
					{SecretRef: &api.SecretEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "gone"}, Optional: &yes}}},
				Env: []api.EnvVar{{Name: "APP_MODE", Value: "slow-$(APP_LEVEL)"}},
			},
			want: []string{"APP_LEVEL=3", "APP_MODE=slow-3", "PATH=" + defaultPath},
		},
		{
			name: "missing key",
			c: api.Container{Env: []api.EnvVar{
				{Name: "X", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.ConfigMapKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}, Key: "NOPE"}}},
			}},
			wantErr: "couldn't find key NOPE in ConfigMap shop/cfg",
		},
		{
			name: "missing secret",
			c: api.Container{Env: []api.EnvVar{
				{Name: "X", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "vault"}, Key: "k"}}},
			}},
			wantErr: `secret "shop/vault" not found`,
		},
		{
			name:    "standalone has no references",
			c:       api.Container{EnvFrom: []api.EnvFromSource{{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}}}}},
			refs:    RefResolver(nil),
			wantErr: "standalone agent",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refs := tt.refs
			if refs == nil && !strings.Contains(tt.name, "standalone") {
				refs = testRefs()
			}
			env, _, err := containerEnv(context.Background(), envSource{pod: envPod(), nodeIP: "10.0.0.7", refs: refs}, &tt.c)
			if tt.wantErr != "" {
				var ce *configError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &ce) {
					t.Fatalf("err = %v, want a config error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(env, tt.want) {
				t.Errorf("env = %q\nwant  %q", env, tt.want)
			}
		})
	}
}

func TestVolumeEnvAndCommandLine(t *testing.T) {
	c := &api.Container{Name: "app", Command: []string{"serve", "--data=$(BERTH_VOLUME_CACHE_DIR)"}, Args: []string{"$(PORT)", "$$(PORT)"},
		Env: []api.EnvVar{{Name: "PORT", Value: "80"}}}
	env, vars, err := containerEnv(context.Background(), envSource{pod: envPod(), volumes: map[string]string{"cache-dir": "/d/cache", "b": "/d/b"}}, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PORT=80", "BERTH_VOLUME_B=/d/b", "BERTH_VOLUME_CACHE_DIR=/d/cache", "PATH=" + defaultPath}
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	argv, err := commandLine(c, vars)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"serve", "--data=/d/cache", "80", "$(PORT)"}; !slices.Equal(argv, want) {
		t.Errorf("argv = %q, want %q", argv, want)
	}
	// Without a command, args alone run, as for an image without an
	// entrypoint.
	argv, err = commandLine(&api.Container{Name: "app", Image: "busybox", Args: []string{"/bin/echo", "$(PORT)"}}, vars)
	if want := []string{"/bin/echo", "80"}; err != nil || !slices.Equal(argv, want) {
		t.Errorf("args alone: argv = %q (%v), want %q", argv, err, want)
	}
	// Flags alone were meant for the image's entrypoint.
	_, err = commandLine(&api.Container{Name: "app", Image: "nginx", Args: []string{"-g", "daemon off;"}}, nil)
	if ce := (*configError)(nil); !errors.As(err, &ce) || !strings.Contains(err.Error(), `flag "-g"`) || !strings.Contains(err.Error(), "entrypoint") {
		t.Errorf("args of flags alone: %v", err)
	}
	_, err = commandLine(&api.Container{Name: "app", Image: "nginx"}, nil)
	var ce *configError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "runs `command`") || !strings.Contains(err.Error(), "nginx") {
		t.Errorf("no command: %v", err)
	}
}

// TestCommandLineOwnBerth checks that a container whose command is `berth`
// runs the agent's own binary, not whichever berth the PATH finds first,
// and that other commands are left to the PATH.
func TestCommandLineOwnBerth(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("no executable path: %v", err)
	}
	older := t.TempDir() // where a PATH search would find another berth
	tests := []struct {
		name string
		c    api.Container
		want []string
	}{
		{"command", api.Container{Command: []string{"berth", "toolbox", "http-echo"}, Args: []string{"--text", "$(TEXT)"}},
			[]string{exe, "toolbox", "http-echo", "--text", "hi"}},
		{"args alone", api.Container{Args: []string{"berth", "toolbox"}}, []string{exe, "toolbox"}},
		{"expanded", api.Container{Command: []string{"$(TOOL)", "version"}}, []string{exe, "version"}},
		{"a path is kept", api.Container{Command: []string{older + "/berth", "version"}}, []string{older + "/berth", "version"}},
		{"another name", api.Container{Command: []string{"berthd"}}, []string{"berthd"}},
		{"a shell", api.Container{Command: []string{"sh", "-c", "berth version"}}, []string{"sh", "-c", "berth version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Name = "app"
			tt.c.Env = []api.EnvVar{{Name: "PATH", Value: older + ":/usr/bin:/bin"}, {Name: "TEXT", Value: "hi"}, {Name: "TOOL", Value: "berth"}}
			_, vars, err := containerEnv(context.Background(), envSource{pod: envPod()}, &tt.c)
			if err != nil {
				t.Fatal(err)
			}
			argv, err := commandLine(&tt.c, vars)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(argv, tt.want) {
				t.Errorf("argv = %q, want %q", argv, tt.want)
			}
		})
	}
}

// TestPodPath: a pod's default PATH starts with a directory holding only
// a link to the agent's own berth, made again when it points elsewhere
// (an upgraded binary), then the host's search path.
// TestPodPathUnderUmask: the directory of the berth link is one a pod's
// user may search, whatever umask the agent runs with.
func TestPodPathUnderUmask(t *testing.T) {
	dir := t.TempDir()
	defer syscall.Umask(syscall.Umask(0o077))
	if _, err := podPath(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "bin")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("bin: %v %v, want mode 0755", fi, err)
	}
}

func TestPodPath(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "bin", "berth")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/berth-of-old", link); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		path, err := podPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "bin") + ":" + hostPath; path != want {
			t.Errorf("PATH %q, want %q", path, want)
		}
		if target, err := os.Readlink(link); err != nil || target != ownBinary {
			t.Errorf("bin/berth links to %q (%v), want the agent's own %q", target, err, ownBinary)
		}
		if entries, _ := os.ReadDir(filepath.Dir(link)); len(entries) != 1 {
			t.Errorf("bin holds %d entries, want the link alone", len(entries))
		}
	}

	// A container whose pod sets no PATH gets it.
	h := newTestHarness(t)
	h.m.Sync(workerPod("u1", "web", api.RestartPolicyAlways, "app"))
	h.waitRun(rid("u1", "app", 0), runtime.StateRunning)
	starts := h.rt.startsOf("u1")
	if len(starts) == 0 || !slices.ContainsFunc(starts[0].Env, func(e string) bool {
		return strings.HasPrefix(e, "PATH="+filepath.Join(h.m.o.DataDir, "bin")+":")
	}) {
		t.Errorf("the container's environment has no PATH starting with the agent's bin: %v", starts)
	}
}

func TestAPIServerEnv(t *testing.T) {
	for _, tt := range []struct {
		server string
		want   []string
	}{
		{"", nil},
		{"https://10.0.0.1:6443", []string{
			"KUBERNETES_SERVICE_HOST=10.0.0.1", "KUBERNETES_SERVICE_PORT=6443", "KUBERNETES_SERVICE_PORT_HTTPS=6443",
			"KUBERNETES_PORT=tcp://10.0.0.1:6443", "KUBERNETES_PORT_6443_TCP=tcp://10.0.0.1:6443",
			"KUBERNETES_PORT_6443_TCP_PROTO=tcp", "KUBERNETES_PORT_6443_TCP_PORT=6443", "KUBERNETES_PORT_6443_TCP_ADDR=10.0.0.1",
		}},
		{"https://[fd00::1]", []string{
			"KUBERNETES_SERVICE_HOST=fd00::1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443",
			"KUBERNETES_PORT=tcp://[fd00::1]:443", "KUBERNETES_PORT_443_TCP=tcp://[fd00::1]:443",
			"KUBERNETES_PORT_443_TCP_PROTO=tcp", "KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_ADDR=fd00::1",
		}},
		{"https://cp.example:8443/", []string{
			"KUBERNETES_SERVICE_HOST=cp.example", "KUBERNETES_SERVICE_PORT=8443", "KUBERNETES_SERVICE_PORT_HTTPS=8443",
			"KUBERNETES_PORT=tcp://cp.example:8443", "KUBERNETES_PORT_8443_TCP=tcp://cp.example:8443",
			"KUBERNETES_PORT_8443_TCP_PROTO=tcp", "KUBERNETES_PORT_8443_TCP_PORT=8443", "KUBERNETES_PORT_8443_TCP_ADDR=cp.example",
		}},
	} {
		got, err := apiServerEnv(tt.server)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("apiServerEnv(%q) = %q, %v; want %q", tt.server, got, err, tt.want)
		}
	}
	for _, bad := range []string{"https://", "://x", "/path"} {
		if _, err := apiServerEnv(bad); err == nil {
			t.Errorf("apiServerEnv(%q) accepted", bad)
		}
	}
}

// TestContainerEnvAPIServer: every container of an agent with a server
// is told where it is, first, so that $(VAR) can name it and a
// container's own variable of the same name wins, as in Kubernetes.
func TestContainerEnvAPIServer(t *testing.T) {
	apiServer, err := apiServerEnv("https://127.0.0.40:6443")
	if err != nil {
		t.Fatal(err)
	}
	c := &api.Container{Name: "c", Env: []api.EnvVar{
		{Name: "API", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
		{Name: "KUBERNETES_SERVICE_PORT", Value: "443"},
	}}
	env, vars, err := containerEnv(context.Background(), envSource{pod: envPod(), apiServer: apiServer}, c)
	if err != nil {
		t.Fatal(err)
	}
	if vars["API"] != "https://127.0.0.40:6443" {
		t.Errorf("API = %q", vars["API"])
	}
	if vars["KUBERNETES_SERVICE_PORT"] != "443" || vars["KUBERNETES_SERVICE_PORT_HTTPS"] != "6443" || vars["KUBERNETES_PORT_6443_TCP_ADDR"] != "127.0.0.40" {
		t.Errorf("env %q", env)
	}
	if n := len(slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return !strings.HasPrefix(kv, "KUBERNETES_SERVICE_PORT=") })); n != 1 {
		t.Errorf("KUBERNETES_SERVICE_PORT %d times in %q", n, env)
	}
	// No server (standalone): no variables.
	_, vars, _ = containerEnv(context.Background(), envSource{pod: envPod()}, &api.Container{Name: "c"})
	for k := range vars {
		if strings.HasPrefix(k, "KUBERNETES_") {
			t.Errorf("standalone: %s is set", k)
		}
	}
}
