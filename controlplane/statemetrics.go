package controlplane

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// stateMetrics are the metrics of what the store holds, read from one
// snapshot at scrape time so that writes pay nothing for them: objects by
// resource, the store file's size, nodes by readiness, and each source's
// Ready condition, applied objects and last successful sync.
type stateMetrics struct {
	store   *store.Store
	sources *sources
	// dbSize is the bolt file's size; nil for a store with no file.
	dbSize func() (int64, error)

	objects, dbBytes, nodes                        *prometheus.Desc
	sourceCondition, sourceObjects, sourceLastSync *prometheus.Desc
	leader                                         *prometheus.Desc
}

// conditionStatuses are the values of a condition's status, each a series
// of berth_source_condition, as Flux's gotk_reconcile_condition has them.
var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

func newStateMetrics(st *store.Store, srcs *sources, dbSize func() (int64, error)) *stateMetrics {
	return &stateMetrics{
		store:   st,
		sources: srcs,
		dbSize:  dbSize,
		objects: prometheus.NewDesc("berth_store_objects",
			"Objects in the store by resource.", []string{"resource"}, nil),
		dbBytes: prometheus.NewDesc("berth_store_db_total_size_in_bytes",
			"Size of the store's bolt file, free pages included (bolt store only).", nil, nil),
		nodes: prometheus.NewDesc("berth_nodes",
			"Nodes by the status of their Ready condition (True, False, Unknown; Unknown too for a node that reports none).", []string{"ready"}, nil),
		sourceCondition: prometheus.NewDesc("berth_source_condition",
			"1 for the status a Source's condition has, 0 for the others (Flux's gotk_reconcile_condition).", []string{"name", "type", "status"}, nil),
		sourceObjects: prometheus.NewDesc("berth_source_objects",
			"Objects in the revision a Source last applied.", []string{"name"}, nil),
		leader: prometheus.NewDesc("berth_leader_election_master_status",
			"1 while this server leads the cluster (runs the controllers, the scheduler and the sources, and writes), 0 while it follows another's over an etcd store (Kubernetes' leader_election_master_status).", nil, nil),
		sourceLastSync: prometheus.NewDesc("berth_source_last_successful_sync_timestamp_seconds",
			"When a Source last applied a revision successfully (Ready=True), as a Unix time; absent until it has since the server started.", []string{"name"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *stateMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.objects, m.dbBytes, m.nodes, m.sourceCondition, m.sourceObjects, m.sourceLastSync, m.leader} {
		ch <- d
	}
	m.sources.syncDuration.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *stateMetrics) Collect(ch chan<- prometheus.Metric) {
	snap := m.store.Snapshot()
	for _, k := range api.Kinds() {
		n := 0
		if err := snap.Each(k, store.Filter{}, func(api.Object) bool { n++; return true }); err != nil {
			ch <- prometheus.NewInvalidMetric(m.objects, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.objects, prometheus.GaugeValue, float64(n), k.Resource)
	}
	if m.dbSize != nil {
		if n, err := m.dbSize(); err != nil {
			ch <- prometheus.NewInvalidMetric(m.dbBytes, err)
		} else {
			ch <- prometheus.MustNewConstMetric(m.dbBytes, prometheus.GaugeValue, float64(n))
		}
	}
	ch <- prometheus.MustNewConstMetric(m.leader, prometheus.GaugeValue, leading(m.store))
	m.collectNodes(ch, snap)
	m.collectSources(ch, snap)
	m.sources.syncDuration.Collect(ch)
}

func (m *stateMetrics) collectNodes(ch chan<- prometheus.Metric, snap *store.Snapshot) {
	count := map[api.ConditionStatus]int{api.ConditionTrue: 0, api.ConditionFalse: 0, api.ConditionUnknown: 0}
	err := snap.Each(api.KindOf(&api.Node{}), store.Filter{}, func(o api.Object) bool {
		ready := api.ConditionUnknown
		for _, c := range o.(*api.Node).Status.Conditions {
			if c.Type == api.NodeReady {
				ready = c.Status
			}
		}
		if _, ok := count[ready]; !ok {
			ready = api.ConditionUnknown // a status no node should report
		}
		count[ready]++
		return true
	})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(m.nodes, err)
		return
	}
	for status, n := range count {
		ch <- prometheus.MustNewConstMetric(m.nodes, prometheus.GaugeValue, float64(n), string(status))
	}
}

func (m *stateMetrics) collectSources(ch chan<- prometheus.Metric, snap *store.Snapshot) {
	err := snap.Each(sourceKind, store.Filter{}, func(o api.Object) bool {
		src := o.(*api.Source)
		status := metav1.ConditionUnknown
		if c := meta.FindStatusCondition(src.Status.Conditions, api.SourceReady); c != nil {
			status = c.Status
		}
		for _, s := range conditionStatuses {
			v := 0.0
			if s == status {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(m.sourceCondition, prometheus.GaugeValue, v, src.Name, api.SourceReady, string(s))
		}
		ch <- prometheus.MustNewConstMetric(m.sourceObjects, prometheus.GaugeValue, float64(src.Status.Objects), src.Name)
		return true
	})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(m.sourceCondition, err)
	}
	for name, at := range m.sources.lastSuccesses() {
		ch <- prometheus.MustNewConstMetric(m.sourceLastSync, prometheus.GaugeValue, float64(at.UnixNano())/1e9, name)
	}
}

// leading is the leader metric's value: 1 while the store leads, 0 while
// it follows, and 0 from the moment it knows it lost the lead, though
// its server has not yet stepped down.
func leading(st *store.Store) float64 {
	if st.Following() {
		return 0
	}
	select {
	case <-st.Lost():
		return 0
	default:
		return 1
	}
}
