package api

//go:generate go tool controller-gen object paths=.

// The OpenAPI schemas of the kinds, and of the apimachinery types they
// use, with the Go comments as descriptions, as Go and then as the JSON
// the API server publishes (kubectl explain reads them). The linter's
// findings are kept in openapi/api-rule-violations.list, where a change
// shows.
//go:generate go tool openapi-gen --output-dir openapi/internal/definitions --output-pkg github.com/berth-dev/berth/api/openapi/internal/definitions --output-file zz_generated.openapi.go --go-header-file /dev/null --report-filename openapi/api-rule-violations.list . k8s.io/api/core/v1 k8s.io/api/autoscaling/v2 k8s.io/api/networking/v1 k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/api/resource k8s.io/apimachinery/pkg/util/intstr k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1 k8s.io/api/admissionregistration/v1
//go:generate go run ./openapi/gen openapi/definitions.json
