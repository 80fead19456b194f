package api

// JoinPath is where an agent trades the node join token for its own node
// credential: POST JoinPath with "Authorization: Bearer <join token>" and
// the body JoinRequest; the answer is a JoinResponse. It sits outside the
// resource paths because it is not a resource and needs no credential
// beyond the join token.
const JoinPath = "/berth/v1/join"

// JoinRequest is the body of a join: the node that asks for a credential
// and the addresses its agent serves on, for its serving certificate.
//
// +kubebuilder:object:generate=false
type JoinRequest struct {
	NodeName string `json:"nodeName"`
	// Addresses are the IPs and DNS names the agent's HTTPS endpoint is
	// reached at; the server's CA signs a serving certificate for them.
	Addresses []string `json:"addresses,omitempty"`
}

// JoinResponse carries the node credential: a bearer token for every later
// request of the node, which authenticates as system:node:<nodeName>, and
// (when the request named addresses and the server issues them) a serving
// certificate and key, in PEM, signed by the cluster CA, so that the API
// server can verify the agent it proxies logs from.
//
// +kubebuilder:object:generate=false
type JoinResponse struct {
	Token              string `json:"token"`
	ServingCertificate string `json:"servingCertificate,omitempty"`
	ServingKey         string `json:"servingKey,omitempty"`
}
