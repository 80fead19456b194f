// Package patch applies the bodies of a PATCH: a JSON merge patch and a
// JSON patch with evanphx/json-patch, a strategic merge patch with
// apimachinery's strategicpatch, as kube-apiserver applies them, with its
// limits and its errors.
package patch
