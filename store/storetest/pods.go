package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Pod returns pod i as a ReplicaSet makes it: labels, an owner, one
// container with requests, a port and an environment variable, bound to
// node (or unbound when node is empty).
func Pod(i int, node string) *api.Pod {
	t := true
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default",
			Name:      PodName(i),
			Labels:    map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6",
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i%100)), Controller: &t, BlockOwnerDeletion: &t,
			}},
		},
		Spec: api.PodSpec{
			NodeName: node,
			Containers: []api.Container{{
				Name:    "web",
				Image:   "web:1.0",
				Command: []string{"/bin/web", "--listen", "$(POD_IP):8080"},
				Env:     []api.EnvVar{{Name: "POD_IP", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				Ports:   []api.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: api.ProtocolTCP}},
				Resources: api.ResourceRequirements{Requests: api.ResourceList{
					api.ResourceCPU:    resource.MustParse("100m"),
					api.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
			RestartPolicy: api.RestartPolicyAlways,
		},
	}
}

// PodName is the name of Pod(i).
func PodName(i int) string { return fmt.Sprintf("web-7d4b9c8f6-%06d", i) }

// NodeName spreads pod i over nodes nodes.
func NodeName(i, nodes int) string { return fmt.Sprintf("node-%d", i%nodes) }

// CreatePods writes pods in transactions of batch pods from workers
// goroutines, resetting the benchmark timer first, and returns how long
// the writes took.
func CreatePods(b *testing.B, s *store.Store, pods []*api.Pod, batch, workers int) time.Duration {
	b.Helper()
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for lo := range next {
				_, err := s.Txn(ctx, func(tx *store.Txn) error {
					for _, p := range pods[lo:min(lo+batch, len(pods))] {
						if _, err := tx.Create(p); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	for lo := 0; lo < len(pods); lo += batch {
		next <- lo
	}
	close(next)
	wg.Wait()
	return time.Since(start)
}

// MakePods returns n pods spread over nodes nodes.
func MakePods(n, nodes int) []*api.Pod {
	pods := make([]*api.Pod, n)
	for i := range pods {
		pods[i] = Pod(i, NodeName(i, nodes))
	}
	return pods
}
