package apiserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berth-dev/berth/api"
)

// kubectl's generators (create namespace, configmap, secret, deployment,
// service; run; expose) send their bodies as Kubernetes protobuf, and a
// 415 does not make them try JSON. berth reads such a body with
// Kubernetes' own generated types, re-encodes it as JSON, and from there
// it takes the one decoder like any other body: a field berth does not
// implement is still a 400 naming it. Answers are always JSON, which
// those clients also accept.

const mediaProtobuf = "application/vnd.kubernetes.protobuf"

// protobufMagic starts every Kubernetes protobuf document.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

type protobufObject interface {
	runtime.Object
	Unmarshal([]byte) error
}

// protobufKinds are the kinds a protobuf body may hold: the built-in
// Kubernetes kinds berth serves.
var protobufKinds = map[schema.GroupVersionKind]func() protobufObject{
	corev1.SchemeGroupVersion.WithKind("Namespace"):             func() protobufObject { return &corev1.Namespace{} },
	corev1.SchemeGroupVersion.WithKind("Node"):                  func() protobufObject { return &corev1.Node{} },
	corev1.SchemeGroupVersion.WithKind("Pod"):                   func() protobufObject { return &corev1.Pod{} },
	corev1.SchemeGroupVersion.WithKind("Service"):               func() protobufObject { return &corev1.Service{} },
	corev1.SchemeGroupVersion.WithKind("Endpoints"):             func() protobufObject { return &corev1.Endpoints{} },
	corev1.SchemeGroupVersion.WithKind("ReplicationController"): func() protobufObject { return &corev1.ReplicationController{} },
	corev1.SchemeGroupVersion.WithKind("PersistentVolume"):      func() protobufObject { return &corev1.PersistentVolume{} },
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"): func() protobufObject { return &corev1.PersistentVolumeClaim{} },
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"):        func() protobufObject { return &corev1.ServiceAccount{} },
	corev1.SchemeGroupVersion.WithKind("Secret"):                func() protobufObject { return &corev1.Secret{} },
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):             func() protobufObject { return &corev1.ConfigMap{} },
	corev1.SchemeGroupVersion.WithKind("ResourceQuota"):         func() protobufObject { return &corev1.ResourceQuota{} },
	corev1.SchemeGroupVersion.WithKind("LimitRange"):            func() protobufObject { return &corev1.LimitRange{} },
	corev1.SchemeGroupVersion.WithKind("Event"):                 func() protobufObject { return &corev1.Event{} },
	appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):            func() protobufObject { return &appsv1.ReplicaSet{} },
	appsv1.SchemeGroupVersion.WithKind("Deployment"):            func() protobufObject { return &appsv1.Deployment{} },
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"):           func() protobufObject { return &appsv1.StatefulSet{} },
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"):             func() protobufObject { return &appsv1.DaemonSet{} },
	appsv1.SchemeGroupVersion.WithKind("ControllerRevision"):    func() protobufObject { return &appsv1.ControllerRevision{} },
	storagev1.SchemeGroupVersion.WithKind("StorageClass"):       func() protobufObject { return &storagev1.StorageClass{} },
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):   func() protobufObject { return &networkingv1.NetworkPolicy{} },
	networkingv1.SchemeGroupVersion.WithKind("Ingress"):         func() protobufObject { return &networkingv1.Ingress{} },
	networkingv1.SchemeGroupVersion.WithKind("IngressClass"):    func() protobufObject { return &networkingv1.IngressClass{} },
	schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"):   func() protobufObject { return &schedulingv1.PriorityClass{} },
	coordinationv1.SchemeGroupVersion.WithKind("Lease"):         func() protobufObject { return &coordinationv1.Lease{} },
	discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"):    func() protobufObject { return &discoveryv1.EndpointSlice{} },
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"): func() protobufObject { return &policyv1.PodDisruptionBudget{} },
	// kubectl create job and create cronjob send them this way.
	batchv1.SchemeGroupVersion.WithKind("Job"): func() protobufObject { return &batchv1.Job{} },
	// kubectl autoscale sends the v1 object (see autoscalingv1.go).
	autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"): func() protobufObject { return &autoscalingv1.HorizontalPodAutoscaler{} },
	autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"): func() protobufObject { return &autoscalingv2.HorizontalPodAutoscaler{} },
	batchv1.SchemeGroupVersion.WithKind("CronJob"):                       func() protobufObject { return &batchv1.CronJob{} },
	rbacv1.SchemeGroupVersion.WithKind("Role"):                           func() protobufObject { return &rbacv1.Role{} },
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"):                    func() protobufObject { return &rbacv1.ClusterRole{} },
	rbacv1.SchemeGroupVersion.WithKind("RoleBinding"):                    func() protobufObject { return &rbacv1.RoleBinding{} },
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"):             func() protobufObject { return &rbacv1.ClusterRoleBinding{} },
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"): func() protobufObject {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{}
	},
	admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"): func() protobufObject {
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	},
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"): func() protobufObject {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{}
	},
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"): func() protobufObject {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	},
	// kubectl drain evicts pods this way.
	policyv1.SchemeGroupVersion.WithKind("Eviction"):      func() protobufObject { return &policyv1.Eviction{} },
	policyv1beta1.SchemeGroupVersion.WithKind("Eviction"): func() protobufObject { return &policyv1beta1.Eviction{} },
	// kubectl create token asks for a token this way, and kubectl auth
	// can-i and whoami ask about themselves.
	authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"):           func() protobufObject { return &authenticationv1.TokenRequest{} },
	authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"):      func() protobufObject { return &authenticationv1.SelfSubjectReview{} },
	authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"): func() protobufObject { return &authorizationv1.SelfSubjectAccessReview{} },
	authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"):  func() protobufObject { return &authorizationv1.SelfSubjectRulesReview{} },
	authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"):     func() protobufObject { return &authorizationv1.SubjectAccessReview{} },
	authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview"): func() protobufObject {
		return &authorizationv1.LocalSubjectAccessReview{}
	},
}

// A typed client sends a delete's options as DeleteOptions of the group
// version of what it deletes.
func init() {
	for _, k := range api.Kinds() {
		protobufKinds[k.GVK.GroupVersion().WithKind("DeleteOptions")] = func() protobufObject { return &metav1.DeleteOptions{} }
	}
}

// protobufToJSON turns a Kubernetes protobuf body into JSON.
func protobufToJSON(data []byte) (out []byte, err error) {
	defer func() {
		// Generated decoders index by lengths they read; a hostile body
		// must be a 400, never a crash.
		if r := recover(); r != nil {
			out, err = nil, badRequest("the protobuf body could not be read")
		}
	}()
	if !bytes.HasPrefix(data, protobufMagic) {
		return nil, badRequest("the body is not Kubernetes protobuf: it lacks the k8s\\x00 prefix")
	}
	var u runtime.Unknown
	if err := u.Unmarshal(data[len(protobufMagic):]); err != nil {
		return nil, badRequest("the protobuf body is malformed: %v", err)
	}
	gvk := schema.FromAPIVersionAndKind(u.APIVersion, u.Kind)
	newObj, ok := protobufKinds[gvk]
	if !ok {
		return nil, unsupportedMediaType(mediaProtobuf+" for "+gvk.String(), mediaJSON, mediaYAML)
	}
	obj := newObj()
	if err := obj.Unmarshal(u.Raw); err != nil {
		return nil, badRequest("the protobuf %s is malformed: %v", u.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	data, err = json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	// Kubernetes' types always encode a status (a Service's holds an empty
	// loadBalancer, which berth does not have); a create ignores it, so it
	// goes.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	delete(fields, "status")
	return json.Marshal(fields)
}

// decodeSmallBody reads a body of at most max bytes holding one what (a
// TokenRequest, a review) into into: JSON, or Kubernetes protobuf as
// kubectl's typed client sends it.
func decodeSmallBody(r *http.Request, max int64, into any, what string) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return badRequest("reading the %s: %v", what, err)
	}
	if int64(len(data)) > max {
		return bodyTooLarge(max)
	}
	if contentType(r) == mediaProtobuf {
		if data, err = protobufToJSON(data); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(data, into); err != nil {
		return badRequest("the body is not a %s: %v", what, err)
	}
	return nil
}
