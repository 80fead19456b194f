package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
)

// TestHelmInstallOfTheStockChart: Helm's own install, through the Go
// library and a kubeconfig as the helm command does it, puts the chart
// `helm create` makes into berth with a container securityContext, a
// podSecurityContext and autoscaling on: every object is stored as
// rendered, and the release is recorded in its Secret.
func TestHelmInstallOfTheStockChart(t *testing.T) {
	s := startServer(t)
	dir, err := chartutil.Create("web", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	chart, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"securityContext": map[string]any{
			"capabilities":           map[string]any{"drop": []any{"ALL"}},
			"readOnlyRootFilesystem": true,
			"runAsNonRoot":           true,
			"runAsUser":              1000,
		},
		"podSecurityContext": map[string]any{"fsGroup": 2000},
		"autoscaling": map[string]any{
			"enabled": true, "minReplicas": 1, "maxReplicas": 5,
			"targetCPUUtilizationPercentage": 80, "targetMemoryUtilizationPercentage": 80,
		},
	}

	cfg := new(action.Configuration)
	if err := cfg.Init(kube.GetConfig(s.kubeconfig, "", "default"), "default", "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "web", "default"
	install.Timeout = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rel, err := install.RunWithContext(ctx, chart, values)
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	if rel.Info.Status != release.StatusDeployed {
		t.Fatalf("release %s: %s", rel.Name, rel.Info.Status)
	}

	// What the chart rendered is what berth keeps.
	d, err := s.getJSON(t, "deploy", "web")
	if err != nil {
		t.Fatal(err)
	}
	if r := field(d, "spec.replicas"); r != float64(1) {
		// autoscaling.enabled leaves replicas out of the template:
		// Kubernetes' default of 1 holds until the autoscaler acts.
		t.Errorf("replicas %v", r)
	}
	if g := field(d, "spec.template.spec.securityContext.fsGroup"); g != float64(2000) {
		t.Errorf("podSecurityContext.fsGroup %v", g)
	}
	sc, _ := field(d, "spec.template.spec.containers").([]any)
	if len(sc) != 1 {
		t.Fatalf("containers %v", sc)
	}
	c, _ := sc[0].(map[string]any)
	if got := fmt.Sprint(field(c, "securityContext")); got != "map[capabilities:map[drop:[ALL]] readOnlyRootFilesystem:true runAsNonRoot:true runAsUser:1000]" {
		t.Errorf("container securityContext %s", got)
	}
	hpa, err := s.getJSON(t, "hpa", "web")
	if err != nil {
		t.Fatal(err)
	}
	if ref := field(hpa, "spec.scaleTargetRef.name"); ref != "web" {
		t.Errorf("hpa target %v", ref)
	}
	if metrics, _ := field(hpa, "spec.metrics").([]any); len(metrics) != 2 {
		t.Errorf("hpa metrics %v", metrics)
	}
	for _, o := range [][]string{{"svc", "web"}, {"serviceaccount", "web"}} {
		if _, err := s.getJSON(t, o...); err != nil {
			t.Errorf("%s: %v", strings.Join(o, "/"), err)
		}
	}
	secrets := s.mustBerth(t, "get", "secrets", "-l", "owner=helm,name=web", "-o", "name")
	if !strings.Contains(secrets, "sh.helm.release.v1.web.v1") {
		t.Errorf("the release's Secret: %q", secrets)
	}

	// Helm reads its release back from berth: the status and an
	// uninstall that deletes what it made.
	st, err := action.NewStatus(cfg).Run("web")
	if err != nil || st.Info.Status != release.StatusDeployed {
		t.Fatalf("helm status: %v", err)
	}
	un := action.NewUninstall(cfg)
	un.Timeout = 2 * time.Minute
	if _, err := un.Run("web"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	waitFor(t, 60*time.Second, "the chart's objects gone", func() error {
		out := s.mustBerth(t, "get", "deploy,svc,hpa", "-o", "name")
		if strings.TrimSpace(strings.ReplaceAll(out, "service/kubernetes", "")) != "" {
			return fmt.Errorf("left: %s", out)
		}
		return nil
	})
}
