package pods

// Annotations the agent puts on the pods it runs from its own manifests,
// with the kubelet's names, so tools that know static pods know berth's.
const (
	// AnnotationConfigSource says where a pod came from: ConfigSourceFile,
	// ConfigSourceHTTP for static pods, ConfigSourceAPI (or none) for the
	// pods the control plane bound to the node.
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationConfigHash is a static pod's hash: its UID, and the value
	// of api.AnnotationMirror on its mirror pod.
	AnnotationConfigHash = "kubernetes.io/config.hash"

	ConfigSourceFile = "file"
	ConfigSourceHTTP = "http"
	ConfigSourceAPI  = "api"
)
