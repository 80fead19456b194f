// Package volume binds PersistentVolumeClaims to PersistentVolumes,
// provisions local-path volumes, applies reclaim policies to released
// volumes, keeps claims and volumes in use from going when deleted, and
// tells the scheduler where a pod's volumes can be used.
package volume
