package api

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func rlist(kv ...string) ResourceList {
	l := ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestValidateLimitRange(t *testing.T) {
	runValidation(t, func() *LimitRange {
		return &LimitRange{ObjectMeta: meta("limits"), Spec: LimitRangeSpec{Limits: []LimitRangeItem{
			{Type: LimitTypeContainer, Min: rlist("cpu", "100m"), Max: rlist("cpu", "2"), MaxLimitRequestRatio: rlist("cpu", "4")},
			{Type: LimitTypePersistentVolumeClaim, Max: rlist("storage", "10Gi")},
		}}}
	}, []validationCase[*LimitRange]{
		{"no type", func(o *LimitRange) { o.Spec.Limits[0].Type = "" }, []string{"spec.limits[0].type: Required value"}},
		{"bad type", func(o *LimitRange) { o.Spec.Limits[0].Type = "Node" },
			[]string{`spec.limits[0].type: Unsupported value: "Node"`}},
		{"duplicate", func(o *LimitRange) {
			o.Spec.Limits[1].Type = LimitTypeContainer
			o.Spec.Limits[1].Max = rlist("cpu", "2")
		},
			[]string{`spec.limits[1].type: Duplicate value: "Container"`}},
		{"min over max", func(o *LimitRange) { o.Spec.Limits[0].Min = rlist("cpu", "3") },
			[]string{`spec.limits[0].min[cpu]: Invalid value: "3": min value 3 is greater than max value 2`,
				`spec.limits[0].defaultRequest[cpu]: Invalid value: "2": min value 3 is greater than default request value 2`,
				`spec.limits[0].default[cpu]: Invalid value: "3": min value 3 is greater than default value 2`,
				`spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "4": ratio 4 is greater than max/min = 0.666667`}},
		{"ratio under one", func(o *LimitRange) { o.Spec.Limits[0].MaxLimitRequestRatio = rlist("cpu", "500m") },
			[]string{`spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is less than 1`}},
		{"pod defaults", func(o *LimitRange) {
			o.Spec.Limits = append(o.Spec.Limits, LimitRangeItem{Type: LimitTypePod, Default: rlist("cpu", "1"), DefaultRequest: rlist("cpu", "1")})
		}, []string{"spec.limits[2].default: Forbidden: may not be specified when `type` is 'Pod'",
			"spec.limits[2].defaultRequest: Forbidden: may not be specified when `type` is 'Pod'"}},
		{"claim without storage", func(o *LimitRange) { o.Spec.Limits[1].Max = nil },
			[]string{"spec.limits[1].limits: Required value: either minimum or maximum storage value is required, but neither was provided"}},
		{"claim cpu", func(o *LimitRange) { o.Spec.Limits[1].Max["cpu"] = resource.MustParse("1") },
			[]string{`spec.limits[1].max[cpu]: Unsupported value: "cpu"`}},
		{"default request over default", func(o *LimitRange) {
			o.Spec.Limits[0].Default = rlist("cpu", "1")
			o.Spec.Limits[0].DefaultRequest = rlist("cpu", "1500m")
		}, []string{`spec.limits[0].defaultRequest[cpu]: Invalid value: "1500m": default request value 1500m is greater than default limit value 1`}},
	})
}

// TestDefaultLimitRange fills a Container item as Kubernetes does: the
// default from max, the default request from the default, else from min.
func TestDefaultLimitRange(t *testing.T) {
	lr := &LimitRange{ObjectMeta: meta("limits"), Spec: LimitRangeSpec{Limits: []LimitRangeItem{
		{Type: LimitTypeContainer, Max: rlist("cpu", "2"), Min: rlist("memory", "64Mi")},
		{Type: LimitTypePod, Max: rlist("cpu", "4")},
	}}}
	Default(lr)
	c := lr.Spec.Limits[0]
	if d, r := c.Default["cpu"], c.DefaultRequest["cpu"]; d.String() != "2" || r.String() != "2" {
		t.Errorf("cpu default %s request %s", d.String(), r.String())
	}
	if r := c.DefaultRequest["memory"]; r.String() != "64Mi" {
		t.Errorf("memory default request %s", r.String())
	}
	if _, ok := c.Default["memory"]; ok {
		t.Errorf("memory default limit set from min")
	}
	if p := lr.Spec.Limits[1]; p.Default != nil || p.DefaultRequest != nil {
		t.Errorf("pod item defaulted: %+v", p)
	}
}
