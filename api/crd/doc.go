// Package crd checks custom resources against the structural schemas of
// their CustomResourceDefinitions, with apiextensions-apiserver's own
// pruning, defaulting, OpenAPI and CEL validation: the API server checks
// every write with it, and `berth validate` the custom resources of a
// tree against the CRDs the same tree holds.
package crd
