// Package health tells whether objects a source applied are healthy, by
// kstatus (sigs.k8s.io/cli-utils): workloads rolled out, Jobs complete,
// anything with conditions Ready.
package health
