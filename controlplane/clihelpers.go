package controlplane

import (
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/api/health"
	"github.com/berth-dev/berth/reconcile/apply"
)

// The command line reaches the applier's and the health checks' pure
// parts through these, as it reaches the rest of the server side through
// this package: `berth diff source` prepares a revision as a sync would,
// and `berth tree source` reports each object's health as the Source's
// controller does.

// ObjectKey names an object a source applies.
type ObjectKey = apply.Key

// KeyOf is obj's key.
func KeyOf(obj api.Object) ObjectKey { return apply.KeyOf(obj) }

// PrepareRevision validates, defaults and marks a source's decoded
// objects as the applier does before it writes them.
func PrepareRevision(sourceName string, objs []*api.Decoded, decodeErrs api.ErrorList) ([]*apply.Desired, api.ErrorList) {
	return apply.Prepare(sourceName, objs, decodeErrs, nil)
}

// HealthOf is obj's health by kstatus, and why.
func HealthOf(obj api.Object) (status.Status, string) { return health.Of(obj) }

// HealthName is how health reports name obj.
func HealthName(obj api.Object) string { return health.Name(obj) }
