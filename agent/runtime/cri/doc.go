// Package cri runs containers from images through the Container Runtime
// Interface (CRI v1), as the kubelet's kuberuntime does: a pod sandbox per
// pod, its containers in it, image pulls, logs from the CRI log files, and
// the runtime's own records (ListPodSandbox, ListContainers) as the only
// state, so an agent that restarted finds every pod again. Containerd
// starts and supervises a containerd of the agent's own.
package cri
