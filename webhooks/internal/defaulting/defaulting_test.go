package defaulting

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
)

// recorder is a handler that says whether it was asked.
type recorder struct{ asked bool }

func (r *recorder) Handle(context.Context, admission.Request) admission.Response {
	r.asked = true
	return admission.Denied("asked")
}

// An object that does not decode is admitted unchanged, for the schema to name what is wrong; one that decodes goes
// to the defaulter, and so does a deletion (whose object is empty).
func TestUndecodableObjectsAreLeftToTheSchema(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := daemonsetv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		op        admissionv1.Operation
		raw       string
		wantAsked bool
	}{
		"a number that is a string": {admissionv1.Create, `{"apiVersion":"daemonset.keelson.dev/v1alpha1","kind":"DaemonSet","spec":{"minReadySeconds":"10"}}`, false},
		"a number beyond int32":     {admissionv1.Update, `{"apiVersion":"daemonset.keelson.dev/v1alpha1","kind":"DaemonSet","spec":{"minReadySeconds":2147483648}}`, false},
		"a valid object":            {admissionv1.Create, `{"apiVersion":"daemonset.keelson.dev/v1alpha1","kind":"DaemonSet","spec":{"image":"agent:v1"}}`, true},
		"a deletion":                {admissionv1.Delete, ``, true},
	} {
		next := &recorder{}
		h := schemaFirst{decoder: admission.NewDecoder(scheme), prototype: &daemonsetv1alpha1.DaemonSet{}, next: next}
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: tc.op}}
		req.Object.Raw = []byte(tc.raw)
		resp := h.Handle(context.Background(), req)
		if next.asked != tc.wantAsked {
			t.Errorf("%s: defaulter asked %v, want %v", name, next.asked, tc.wantAsked)
		}
		if !tc.wantAsked && (!resp.Allowed || len(resp.Patches) > 0 || resp.Patch != nil) {
			t.Errorf("%s: got %+v, want admitted unchanged", name, resp.AdmissionResponse)
		}
	}
}
