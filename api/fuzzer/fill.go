package fuzzer

import (
	"math/rand"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"
)

// oneOf fills a string type with one of vals.
func oneOf[T ~string](vals ...T) func(*T, randfill.Continue) {
	return func(v *T, c randfill.Continue) { *v = vals[c.Intn(len(vals))] }
}

const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// label is a random DNS label: most of a pod's strings are names.
func label(c randfill.Continue) string {
	b := make([]byte, 1+c.Intn(8))
	for i := range b {
		b[i] = alphabet[c.Intn(len(alphabet))]
	}
	b[0] = 'a' + byte(c.Intn(26))
	return string(b)
}

// NewFiller is a randfill.Filler for core/v1 objects, seeded: strings are
// DNS labels (most of a pod's strings are names) or empty, quantities and times are
// in the forms the API serves, and the kinds of values berth and
// Kubernetes check come from the values they take. What is still invalid
// is for MakeValid to trim.
func NewFiller(seed int64) *randfill.Filler {
	return randfill.New().RandSource(rand.NewSource(seed)).NilChance(0.3).NumElements(0, 2).MaxDepth(12).Funcs(
		func(s *string, c randfill.Continue) {
			if c.Intn(10) > 0 { // and now and then empty, for the defaults
				*s = label(c)
			}
		},
		func(q *resource.Quantity, c randfill.Continue) {
			if c.Bool() {
				*q = *resource.NewQuantity(c.Int63n(1<<20), resource.BinarySI)
			} else {
				*q = *resource.NewMilliQuantity(c.Int63n(100000), resource.DecimalSI)
			}
		},
		func(rl *corev1.ResourceList, c randfill.Continue) {
			*rl = corev1.ResourceList{}
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
				if c.Bool() {
					var q resource.Quantity
					c.Fill(&q)
					(*rl)[name] = q
				}
			}
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(1e9+c.Int63n(1e9), 0).Rfc3339Copy() },
		func(t *metav1.TypeMeta, c randfill.Continue) {},
		func(m *metav1.ObjectMeta, c randfill.Continue) {
			*m = metav1.ObjectMeta{Name: label(c), Namespace: "default", Labels: map[string]string{"app": "rt"}}
			if c.Bool() {
				m.Annotations = map[string]string{"example.com/" + label(c): label(c)}
			}
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(1 + c.Int31n(65535))
			} else {
				*v = intstr.FromString(label(c))
			}
		},
		union[corev1.VolumeSource], union[corev1.ProbeHandler], union[corev1.LifecycleHandler],
		union[corev1.EnvVarSource], union[corev1.VolumeProjection], union[corev1.EnvFromSource],
		func(p *int32, c randfill.Continue) { *p = c.Int31n(100) },
		func(p *int64, c randfill.Continue) { *p = c.Int63n(100000) },
		oneOf(corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault),
		oneOf(corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever),
		oneOf(corev1.ContainerRestartPolicyAlways),
		oneOf(corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever),
		oneOf(corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError),
		oneOf(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP),
		oneOf(corev1.URISchemeHTTP, corev1.URISchemeHTTPS),
		oneOf(corev1.PreemptLowerPriority, corev1.PreemptNever),
		oneOf(corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathDirectory, corev1.HostPathFile),
		oneOf(corev1.StorageMediumDefault, corev1.StorageMediumMemory),
		oneOf(corev1.MountPropagationNone, corev1.MountPropagationHostToContainer, corev1.MountPropagationBidirectional),
		oneOf(corev1.RecursiveReadOnlyDisabled),
		oneOf(corev1.TolerationOpExists, corev1.TolerationOpEqual),
		oneOf(corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute),
		oneOf(corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist),
		oneOf(metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist),
		oneOf(corev1.DoNotSchedule, corev1.ScheduleAnyway),
		oneOf(corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore),
		oneOf(corev1.Linux),
		oneOf(corev1.DefaultProcMount, corev1.UnmaskedProcMount),
		oneOf(corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined),
		oneOf(corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict),
		oneOf(corev1.FSGroupChangeOnRootMismatch, corev1.FSGroupChangeAlways),
		oneOf(corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed),
		oneOf(corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown),
		oneOf(corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort),
	)
}

// union fills one field of a union (a struct of which exactly one
// field is to be set, such as a volume source or a probe's action), as
// Kubernetes' fuzzer does for the unions it knows.
func union[T any](u *T, c randfill.Continue) {
	v := reflect.ValueOf(u).Elem()
	var members []int
	for i := range v.NumField() {
		if v.Field(i).Kind() == reflect.Pointer {
			members = append(members, i)
		}
	}
	c.FillNoCustom(u)
	keep := members[c.Intn(len(members))]
	for _, i := range members {
		if i != keep {
			v.Field(i).SetZero()
		} else if v.Field(i).IsNil() {
			f := reflect.New(v.Field(i).Type().Elem())
			c.Fill(f.Interface())
			v.Field(i).Set(f)
		}
	}
}

// Pod is a random pod of the seed.
func Pod(seed int64) *corev1.Pod {
	var p corev1.Pod
	f := NewFiller(seed)
	f.Fill(&p)
	if len(p.Spec.Containers) == 0 {
		p.Spec.Containers = make([]corev1.Container, 1)
		f.Fill(&p.Spec.Containers[0])
	}
	p.APIVersion, p.Kind = "v1", "Pod"
	return &p
}
