package pods

import (
	"context"
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/agent/runtime"
	"github.com/berth-dev/berth/api"
)

func dockerConfigSecret(ns, name, cfg string) *api.Secret {
	return &api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: secretTypeDockerConfigJSON, Data: map[string][]byte{secretKeyDockerConfigJSON: []byte(cfg)}}
}

func TestRegistryKeyMatches(t *testing.T) {
	for _, tt := range []struct {
		key, image string
		want       bool
	}{
		{"registry.example.com", "registry.example.com/app:1", true},
		{"https://registry.example.com/", "registry.example.com/team/app:1", true},
		{"registry.example.com/team", "registry.example.com/team/app:1", true},
		{"registry.example.com/team", "registry.example.com/teammate/app:1", false},
		{"registry.example.com/other", "registry.example.com/team/app:1", false},
		{"*.example.com", "registry.example.com/app:1", true},
		{"*.example.com", "example.com/app:1", false},
		{"registry.example.com:5000", "registry.example.com/app:1", false},
		{"127.0.0.1:5000", "127.0.0.1:5000/app:1", true},
		{"https://index.docker.io/v1/", "busybox", true},
		{"docker.io", "library/busybox:1", true},
		{"registry.example.com", "other.example.com/app", false},
	} {
		loc, err := imageLocation(tt.image)
		if err != nil {
			t.Fatal(err)
		}
		if got := registryKeyMatches(tt.key, loc); got != tt.want {
			t.Errorf("key %q, image %q (%s): %v, want %v", tt.key, tt.image, loc, got, tt.want)
		}
	}
}

func TestPullAuths(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret:with-colon"))
	refs := &fakeRefs{secrets: map[string]*api.Secret{
		"shop/regcred": dockerConfigSecret("shop", "regcred", `{"auths":{"registry.example.com":{"username":"wide","password":"p1"},"registry.example.com/team":{"auth":"`+auth+`"},"other.example.com":{"username":"x","password":"y"}}}`),
		"shop/broken":  dockerConfigSecret("shop", "broken", `{"auths":`),
		"shop/legacy":  {ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "legacy"}, Type: secretTypeDockercfg, Data: map[string][]byte{secretKeyDockercfg: []byte(`{"registry.example.com":{"username":"old","password":"p0"}}`)}},
	}}
	pod := &api.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}, Spec: api.PodSpec{ImagePullSecrets: []api.LocalObjectReference{{Name: "regcred"}, {Name: "missing"}, {Name: "broken"}, {Name: "legacy"}}}}
	auths, warning := pullAuths(context.Background(), refs, pod, "registry.example.com/team/app:1")
	want := []runtime.Auth{
		{Username: "robot", Password: "s3cret:with-colon", ServerAddress: "registry.example.com/team"},
		{Username: "wide", Password: "p1", ServerAddress: "registry.example.com"},
		{Username: "old", Password: "p0", ServerAddress: "registry.example.com"},
	}
	if !reflect.DeepEqual(auths, want) {
		t.Errorf("auths %+v, want %+v", auths, want)
	}
	if want := "Unable to retrieve some image pull secrets (shop/missing, shop/broken); attempting to pull the image may not succeed."; warning != want {
		t.Errorf("warning %q, want %q", warning, want)
	}
	if auths, _ := pullAuths(context.Background(), refs, pod, "elsewhere.example.org/app:1"); len(auths) != 0 {
		t.Errorf("credentials for another registry: %+v", auths)
	}
}

func TestParsePullSecretErrors(t *testing.T) {
	for _, tt := range []struct {
		s    *api.Secret
		want string
	}{
		{dockerConfigSecret("shop", "a", `{"auths":`), "secret shop/a: data[.dockerconfigjson]: unexpected end of JSON input"},
		{dockerConfigSecret("shop", "b", `{"auths":{"r.example":{"auth":"!!"}}}`), `secret shop/b: auths["r.example"].auth: illegal base64`},
		{dockerConfigSecret("shop", "c", `{"auths":{"r.example":{"auth":"`+base64.StdEncoding.EncodeToString([]byte("nocolon"))+`"}}}`), `secret shop/c: auths["r.example"].auth: want base64 of user:password`},
		{&api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "d"}, Type: "Opaque"}, `secret shop/d: type "Opaque", want kubernetes.io/dockerconfigjson`},
		{&api.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "e"}, Type: secretTypeDockerConfigJSON}, "secret shop/e: no .dockerconfigjson key"},
	} {
		_, err := parsePullSecret(tt.s)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.s.Name, err, tt.want)
		}
	}
}

func FuzzParsePullSecret(f *testing.F) {
	f.Add([]byte(`{"auths":{"registry.example.com":{"username":"u","password":"p"}}}`), "registry.example.com/app:1")
	f.Add([]byte(`{"auths":{"*.example.com/x":{"auth":"dTpw"}}}`), "a.example.com/x/y")
	f.Fuzz(func(t *testing.T, cfg []byte, image string) {
		all, err := parsePullSecret(dockerConfigSecret("ns", "s", string(cfg)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "secret ns/s: ") {
				t.Fatalf("error without the secret's name: %v", err)
			}
			return
		}
		loc, err := imageLocation(image)
		if err != nil {
			return
		}
		for _, a := range all {
			registryKeyMatches(a.key, loc)
		}
	})
}
