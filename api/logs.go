package api

// APIServerClientName is the common name of the client certificate the API
// server presents when it fetches container logs from a node's agent. The
// agent serves logs to this identity alone: a certificate signed by the
// cluster CA for any other name (a node's own serving certificate among
// them) is refused, so one node cannot read another node's logs.
const APIServerClientName = "berth:apiserver"

// ContainerLogsPath is the prefix of the agent's log endpoint, as the
// kubelet names it: GET ContainerLogsPath/{namespace}/{pod}/{container}
// with the query follow, tailLines and previous.
const ContainerLogsPath = "/containerLogs"
