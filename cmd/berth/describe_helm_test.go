package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
)

func TestDescribeHelmHistory(t *testing.T) {
	var b bytes.Buffer
	w := newDescribeWriter(&b)
	now := metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	describeHelmHistory(w, []api.SourceHelmRelease{
		{Revision: 2, Chart: "web-1.1.0", AppVersion: "2.1", Status: api.HelmDeployed, Updated: now, Description: "Rollback to 1"},
		{Revision: 1, Chart: "web-1.0.0", Status: api.HelmSuperseded, Updated: now, Description: "Install complete"},
	})
	w.flush()
	out := b.String()
	for _, want := range []string{"Helm Release:", "2         Wed, 02 Dec 2026 10:00:00 +0000  deployed    web-1.1.0  2.1          Rollback to 1", "superseded  web-1.0.0  <none>"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe says\n%s\nnot %q", out, want)
		}
	}
}
