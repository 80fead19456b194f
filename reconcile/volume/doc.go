// Package volume binds PersistentVolumeClaims to PersistentVolumes,
// provisions local-path volumes, applies reclaim policies to released
// volumes, and tells the scheduler where a pod's volumes can be used.
package volume
