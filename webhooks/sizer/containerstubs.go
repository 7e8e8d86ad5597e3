package sizer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// The container-stub webhook lets a user rename or remove, with a server-side apply, a container the sizer sizes.
// The sizer applies the container's resources and runtime variables, so it owns fields inside the container's list
// entry; a user's apply that drops the container removes only the fields the user owned, and leaves an entry of
// the sizer's fields alone, without an image: the apiserver refuses the whole apply (containers[0].image: Required
// value, kubernetes#108081). Such an entry is nothing anyone asked for. This webhook removes it from the merged
// object before validation, so the user's apply goes through; the sizer's next pass lets go of the container.
//
// The chart calls it only for an update whose template has a container without an image (a matchCondition), which
// the apiserver would refuse anyway, and never lets it block a write (failurePolicy Ignore).
// +kubebuilder:webhook:path=/mutate-apps-v1-container-stubs,mutating=true,failurePolicy=ignore,sideEffects=None,groups=apps,resources=deployments;statefulsets,verbs=update,versions=v1,name=mcontainer-stubs.sizer.keelson.dev,admissionReviewVersions=v1

// containerStubsPath is the container-stub webhook's path, as the marker above gives it.
const containerStubsPath = "/mutate-apps-v1-container-stubs"

// RegisterContainerStubs serves the container-stub webhook.
func RegisterContainerStubs(mgr ctrl.Manager) {
	mgr.GetWebhookServer().Register(containerStubsPath, &admission.Webhook{Handler: ContainerStubsHandler{}})
}

// ContainerStubsHandler removes the containers a server-side apply left as stubs of the sizer's fields.
type ContainerStubsHandler struct{}

// workload is the part of a Deployment or StatefulSet the webhook reads: its metadata and pod template.
type workload struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Template corev1.PodTemplateSpec `json:"template"`
	} `json:"spec"`
}

// Handle implements admission.Handler. It admits every request: a workload it cannot read goes on unchanged (the
// apiserver then judges it as it would have), and the patch removes whole containers, nothing else.
func (h ContainerStubsHandler) Handle(_ context.Context, req admission.Request) (resp admission.Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = admission.Allowed(fmt.Sprintf("left unchanged: %v", r))
		}
	}()
	// Only the part both kinds share is read: a Deployment and a StatefulSet alike.
	var obj, old workload
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Allowed("left unchanged: " + err.Error())
	}
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return admission.Allowed("left unchanged: " + err.Error())
	}
	stubs := ContainerStubs(obj.Spec.Template.Spec.Containers, old.Spec.Template.Spec.Containers, obj.ManagedFields)
	if len(stubs) == 0 {
		return admission.Allowed("")
	}
	var ops []jsonpatch.JsonPatchOperation
	var names []string
	for _, i := range slices.Backward(stubs) { // from the last, so each index still points at its container
		ops = append(ops, jsonpatch.NewOperation("remove", fmt.Sprintf("/spec/template/spec/containers/%d", i), nil))
		names = append(names, obj.Spec.Template.Spec.Containers[i].Name)
	}
	return admission.Patched("removed what is left of containers the apply removed: "+strings.Join(names, ", "), ops...)
}

// ContainerStubs returns, in order, the indexes of the containers that a write removed but that stayed as stubs of a
// sizer's fields: without an image now, with one before the write, and owned by a sizer's field manager alone. The
// apiserver computes the write's managedFields before it calls the webhook, so a user who still owns a field of the
// container (a PUT or a patch that dropped only its image, an apply with `image: ""`) keeps it, and the apiserver
// refuses the write as it would have: only what no one but a sizer holds any more is removed.
func ContainerStubs(containers, before []corev1.Container, managed []metav1.ManagedFieldsEntry) []int {
	var out []int
	for i, c := range containers {
		if c.Image != "" {
			continue
		}
		if !slices.ContainsFunc(before, func(o corev1.Container) bool { return o.Name == c.Name && o.Image != "" }) {
			continue
		}
		if sizer, others := containerOwners(managed, c.Name); sizer && !others {
			out = append(out, i)
		}
	}
	return out
}

// isSizer reports whether a field manager is a sizer's.
func isSizer(manager string) bool {
	return manager == sizerv1alpha1.FieldManager || strings.HasPrefix(manager, sizerv1alpha1.FieldManager+"/")
}

// containerOwners reports whether a sizer's field manager, and whether any other manager, owns a field of the
// template's container name. Managed fields that cannot be read count as another owner's: a container is removed
// only when it is sure no one else holds it.
func containerOwners(managed []metav1.ManagedFieldsEntry, name string) (sizer, others bool) {
	prefix := fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", name))
	for _, e := range managed {
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			others = true
			continue
		}
		owns := false
		set.Iterate(func(p fieldpath.Path) {
			owns = owns || (len(p) >= len(prefix) && p[:len(prefix)].Equals(prefix))
		})
		if !owns {
			continue
		}
		if isSizer(e.Manager) && e.Subresource == "" {
			sizer = true
		} else {
			others = true
		}
	}
	return sizer, others
}
