// Package auth says who a request to the API server comes from and what
// it may do, as k8s.io/apiserver's authentication and authorization
// packages do for kube-apiserver:
//
//   - authentication: the Identity of a caller, the token authenticator
//     (the admin token, the static token file, node credentials and bound
//     service-account tokens), client certificates signed by the cluster
//     CA, and impersonation (kubectl --as);
//   - the Signer, which issues and verifies service-account tokens and
//     node credentials, and publishes its key (JWKS, OIDC discovery);
//   - authorization: the Policy, which lets the admin and system:masters
//     do everything, holds nodes to the node authorizer's and
//     NodeRestriction's rules, and asks RBAC (apiserver/rbac) for the
//     rest.
//
// It reads the store (a token's bound objects, a node's pods) but serves
// nothing: the API server calls it on every request.
package auth
