// Package endpoints keeps one Endpoints object per Service with a selector,
// listing the ready and not-ready addresses of the pods it selects with their
// ports resolved from each service port's targetPort.
package endpoints
