package pipeline

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/internal/managedfields"
)

// clashingPorts lists the live ports that have the number (and protocol) of one of desired's ports under another
// name. Server-side apply merges Service ports by number and protocol, so an apply would take such a port over and
// rename it: someone else's port (a metrics port, say) would silently become the step's.
func clashingPorts(live, desired *corev1.Service) []corev1.ServicePort {
	var out []corev1.ServicePort
	for _, d := range desired.Spec.Ports {
		for _, l := range live.Spec.Ports {
			if l.Port == d.Port && protocolOf(l) == protocolOf(d) && l.Name != d.Name {
				out = append(out, l)
			}
		}
	}
	return out
}

func protocolOf(p corev1.ServicePort) corev1.Protocol {
	if p.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return p.Protocol
}

// ownsPort reports whether the controller's Apply entry holds a Service port: its port as renamed by an edit,
// which an apply may restore, rather than someone else's.
func ownsPort(entries []metav1.ManagedFieldsEntry, p corev1.ServicePort) bool {
	key := fmt.Sprintf(`k:{"port":%d,"protocol":%q}`, p.Port, protocolOf(p))
	for _, e := range entries {
		if !managedfields.AppliedBy(e, FieldOwner) {
			continue
		}
		trie, _ := managedfields.Decode(e)
		if _, ok := managedfields.Walk(trie, "f:spec", "f:ports")[key]; ok {
			return true
		}
	}
	return false
}

// portTaken says why desired cannot be applied over live when a port of its number is someone else's under
// another name (nil when none is). Only a clash costs an uncached read (the cache strips managed fields).
func (r *Reconciler) portTaken(ctx context.Context, live, desired *corev1.Service) (*failure, error) {
	clash := clashingPorts(live, desired)
	if len(clash) == 0 {
		return nil, nil
	}
	fresh := &corev1.Service{}
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(desired), fresh); err != nil {
		return nil, fmt.Errorf("reading Service %s: %w", desired.Name, err)
	}
	for _, p := range clashingPorts(fresh, desired) {
		if !ownsPort(fresh.ManagedFields, p) {
			return &failure{inferencev1alpha1.ReasonPortTaken, fmt.Sprintf("Service %s already has port %d named %q, which is not this pipeline's: "+
				"give the step another port, or remove that port from the Service", desired.Name, p.Port, p.Name)}, nil
		}
	}
	return nil, nil
}
