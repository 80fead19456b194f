// Package informer shares one list and watch of each kind in the store
// among every consumer in the process (controllers, the scheduler, DNS),
// as client-go's shared informers serve kube-controller-manager: one loop
// per kind, one error policy, the injected clock.
package informer
