// Package fuzzer fills Kubernetes' own core/v1 objects at random, as
// Kubernetes' round-trip tests do (sigs.k8s.io/randfill), defaults them
// as Kubernetes' API server would, and trims what berth's validation
// refuses, for the tests that check that berth keeps every field of a pod
// it accepts.
package fuzzer
