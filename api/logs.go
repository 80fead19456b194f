package api

// APIServerClientName is the common name of the client certificate the API
// server presents when it fetches container logs from a node's agent, or
// runs a command there. The agent serves this identity alone: a certificate signed by the
// cluster CA for any other name (a node's own serving certificate among
// them) is refused, so one node cannot read another node's logs.
const APIServerClientName = "berth:apiserver"

// ContainerLogsPath is the prefix of the agent's log endpoint, as the
// kubelet names it: GET ContainerLogsPath/{namespace}/{pod}/{container}
// with the query follow, tailLines and previous.
const ContainerLogsPath = "/containerLogs"

// ContainerExecPath is the prefix of the agent's exec endpoint, as the
// kubelet names it: GET ContainerExecPath/{namespace}/{pod}/{container}
// with the query command (once per argument), stdin, stdout, stderr and
// tty, upgraded to a WebSocket (protocol v5.channel.k8s.io or
// v4.channel.k8s.io) that carries the command's streams.
const ContainerExecPath = "/exec"

// ContainerAttachPath is the prefix of the agent's attach endpoint, as the
// kubelet names it: GET ContainerAttachPath/{namespace}/{pod}/{container}
// with the query stdin, stdout, stderr and tty, upgraded to a WebSocket
// as an exec is, that carries the streams of the container's own process
// from the time it attaches.
const ContainerAttachPath = "/attach"

// ResourceMetricsPath is the agent's resource metrics endpoint: GET it for
// what the node and its running containers used over the last window, as
// JSON, which the API server's metrics.k8s.io (kubectl top) reads.
const ResourceMetricsPath = "/stats/resources"

// PortForwardPath is the prefix of the agent's port-forward endpoint, as
// the kubelet names it: GET PortForwardPath/{namespace}/{pod}, upgraded to
// a WebSocket (protocol SPDY/3.1+portforward.k8s.io) that carries SPDY
// streams, a data and an error stream for each forwarded connection.
const PortForwardPath = "/portForward"
