// Package ingress holds the control plane's side of the built-in Ingress
// controller: the default IngressClass, its admission (Ingresses that
// name no class get the default one), and the controller that fills in
// the status of the Ingresses berth serves and reports what they name
// that does not exist.
package ingress
