package apply

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/api"
	"github.com/berth-dev/berth/store"
)

// Event reasons the applier records on the objects it touches.
const (
	// ReasonDriftCorrected: a change made outside the source was reverted.
	ReasonDriftCorrected = "DriftCorrected"
	// ReasonAdopted: an object with no source annotation was taken over.
	ReasonAdopted = "Adopted"
)

// EventComponent is the component events name as their source.
const EventComponent = "berth-applier"

var eventKind = api.KindOf(&api.Event{})

// recordEvent writes a Normal event about obj in the transaction that
// changed it, so the event and the change are seen together. Events of
// cluster-scoped objects go to the default namespace, as in Kubernetes.
func (a *Applier) recordEvent(tx *store.Txn, obj api.Object, reason, message string) error {
	k := api.KindOf(obj)
	ns := obj.GetNamespace()
	if ns == "" {
		ns = api.NamespaceDefault
	}
	now := metav1.NewTime(a.clock.Now())
	seq := a.events.Add(1)
	ev := &api.Event{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      fmt.Sprintf("%s.%x", obj.GetName(), now.UnixNano()+int64(seq)),
		},
		InvolvedObject: api.ObjectReference{
			Kind:            k.GVK.Kind,
			APIVersion:      k.APIVersion(),
			Namespace:       obj.GetNamespace(),
			Name:            obj.GetName(),
			UID:             string(obj.GetUID()),
			ResourceVersion: obj.GetResourceVersion(),
		},
		Reason:         reason,
		Message:        message,
		Source:         api.EventSource{Component: EventComponent},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           api.EventTypeNormal,
	}
	_, err := tx.Create(ev)
	return err
}

// driftMessage names the object, the source and the fields reverted.
func driftMessage(source string, key Key, fields []string) string {
	msg := fmt.Sprintf("Source %s reverted a change made outside it to %s", source, key)
	if len(fields) > 0 {
		msg += ": " + strings.Join(fields, ", ")
	}
	return msg
}
