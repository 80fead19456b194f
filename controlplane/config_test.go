package controlplane

import (
	"testing"
	"time"
)

// TestDefaultConfig: the defaults are written out, and what a caller set
// is kept.
func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	d := DefaultConfig()
	if d.Listen != DefaultListen || d.Store != StoreBolt || d.Logger == nil || d.Clock == nil ||
		d.NodeMonitorPeriod != DefaultNodeMonitorPeriod || d.NodeMonitorGracePeriod != DefaultNodeMonitorGracePeriod ||
		d.PodEvictionTimeout != DefaultPodEvictionTimeout || d.TerminatedPodGCThreshold != DefaultTerminatedPodGCThreshold ||
		d.EventTTL != DefaultEventTTL {
		t.Errorf("DefaultConfig() = %+v, a default missing", d)
	}
	set := Config{Listen: "127.0.0.1:0", Store: StoreMemory, EventTTL: time.Minute, TerminatedPodGCThreshold: -1}.withDefaults()
	if set.Listen != "127.0.0.1:0" || set.Store != StoreMemory || set.EventTTL != time.Minute || set.TerminatedPodGCThreshold != -1 {
		t.Errorf("withDefaults changed what was set: %+v", set)
	}
}

// TestParseSources names the flag value that does not parse.
func TestParseSources(t *testing.T) {
	t.Parallel()
	specs, err := ParseSources([]string{"./manifests", "git+https://example.com/r.git?name=r"})
	if err != nil || len(specs) != 2 {
		t.Fatalf("ParseSources: %v, %v", specs, err)
	}
	if _, err := ParseSources([]string{"ftp://example.com/x"}); err == nil {
		t.Error("ParseSources of ftp://: no error")
	}
}
