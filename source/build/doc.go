// Package build turns a source's tree into manifests: a folder holding a
// kustomization is built with kustomize, a folder holding a Helm chart is
// rendered with Helm's engine, and files encrypted with SOPS are opened in
// memory with an age key, before berth's one decoder reads the result.
package build
