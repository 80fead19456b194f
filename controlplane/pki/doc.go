// Package pki keeps a control plane's credentials in its data dir: the
// cluster CA and the node CA, the API server's serving and client
// certificates, the admin and join tokens, the service-account signing
// key, and the kubeconfigs written for the admin and for users.
package pki
