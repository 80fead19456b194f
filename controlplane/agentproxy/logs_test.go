package agentproxy

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berth-dev/berth/api"
)

func TestParsePodLogQuery(t *testing.T) {
	one := &api.Pod{}
	one.Name = "web"
	one.Spec.Containers = []api.Container{{Name: "app"}}
	two := &api.Pod{}
	two.Name = "multi"
	two.Spec.Containers = []api.Container{{Name: "a"}, {Name: "b"}}
	two.Spec.InitContainers = []api.Container{{Name: "setup"}}
	for _, tc := range []struct {
		name      string
		pod       *api.Pod
		query     string
		container string
		agent     string
		err       string
	}{
		{"defaults", one, "", "app", "", ""},
		{"everything", one, "container=app&follow=true&previous=true&tailLines=5&timestamps=false", "app", "follow=true&previous=true&tailLines=5", ""},
		{"false is left out", one, "follow=false&previous=0", "app", "", ""},
		{"tail none", one, "tailLines=0", "app", "tailLines=0", ""},
		{"init container", two, "container=setup", "setup", "", ""},
		{"choose", two, "", "", "", "a container name must be specified for pod multi, choose one of: [a b] or one of the init containers: [setup]"},
		{"unknown container", two, "container=c", "", "", "container c is not valid for pod multi"},
		{"unsupported", one, "stream=All", "", "", "log option stream is not supported"},
		{"timestamps", one, "timestamps=true", "app", "timestamps=true", ""},
		{"since seconds", one, "sinceSeconds=300", "app", "sinceSeconds=300", ""},
		{"since a time", one, "sinceTime=2026-11-30T13:00:00%2B01:00", "app", "sinceTime=2026-11-30T12%3A00%3A00Z", ""},
		{"both since forms", one, "sinceSeconds=5&sinceTime=2026-11-30T12:00:00Z", "", "", "at most one of sinceTime or sinceSeconds"},
		{"bad since seconds", one, "sinceSeconds=0", "", "", `log option sinceSeconds="0"`},
		{"bad since time", one, "sinceTime=noon", "", "", `log option sinceTime="noon"`},
		{"bad bool", one, "follow=yes", "", "", `log option follow="yes": want true or false`},
		{"negative tail", one, "tailLines=-1", "", "", `log option tailLines="-1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parsePodLogQuery(tc.pod, q)
			if tc.err != "" {
				if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want a 400 containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.container != tc.container || got.query.Encode() != tc.agent {
				t.Errorf("container %q, agent query %q; want %q, %q", got.container, got.query.Encode(), tc.container, tc.agent)
			}
		})
	}
}

func TestAgentURL(t *testing.T) {
	pod := &api.Pod{}
	pod.Namespace, pod.Name = "default", "web"
	p := &Proxy{}
	_, err := p.agentURL(pod, api.ContainerLogsPath, "app", nil)
	if se, ok := err.(*apierrors.StatusError); !ok || se.ErrStatus.Code != http.StatusBadRequest || se.ErrStatus.Message != "pod web does not have a host assigned" {
		t.Errorf("unbound pod: %v", err)
	}
}
