// Package defaulting serves the three kinds' defaulting webhooks so that an object that does not decode into its Go
// type reaches the CRD's schema, which says what is wrong with it, instead of being refused with a decoding error.
package defaulting

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Register serves defaulter for objects like prototype at path, the mutating webhook's path in the generated
// configuration. An object that does not decode into its Go type (a string where a number belongs, a malformed
// quantity, a list where a map belongs) is admitted unchanged rather than refused: the apiserver checks it against
// the CRD's schema right after the mutating webhooks and refuses it there, naming the field and what is wrong
// (spec.steps[0].replicas: must be of type integer), where the decoder's error names no field ("quantities must
// match the regular expression …") or one without its list index. The validating webhook, which the apiserver calls
// only after the schema check, still refuses whatever gets past the schema and does not decode.
func Register[T runtime.Object](mgr ctrl.Manager, path string, prototype T, defaulter admission.Defaulter[T]) {
	wh := admission.WithDefaulter(mgr.GetScheme(), defaulter)
	wh.Handler = schemaFirst{decoder: admission.NewDecoder(mgr.GetScheme()), prototype: prototype, next: wh.Handler}
	mgr.GetWebhookServer().Register(path, wh)
}

// schemaFirst admits, unchanged, a request whose object does not decode, and hands every other one to next.
type schemaFirst struct {
	decoder   admission.Decoder
	prototype runtime.Object
	next      admission.Handler
}

// Handle implements admission.Handler.
func (h schemaFirst) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Delete && len(req.Object.Raw) > 0 {
		if err := h.decoder.DecodeRaw(req.Object, h.prototype.DeepCopyObject()); err != nil {
			return admission.Allowed("left unchanged: it does not decode (" + err.Error() + "); the schema check that follows names the field")
		}
	}
	return h.next.Handle(ctx, req)
}
