package manager

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// controller-runtime answers every admission request with HTTP 200, so the webhook's own errors are counted from
// the answer: a result code of 500 or more and a recovered panic are errors; an allowed request, a denial and a
// request the webhook cannot decode are not.
func TestAdmissionErrorsAreCountedFromTheAnswer(t *testing.T) {
	s := newDrainingServer(webhook.NewServer(webhook.Options{}), time.Second)
	for _, tc := range []struct {
		path    string
		answer  func() admission.Response
		counted float64
	}{
		{"/allowed", func() admission.Response { return admission.Allowed("") }, 0},
		{"/denied", func() admission.Response { return admission.Denied("spec.size: must be positive") }, 0},
		{"/undecodable", func() admission.Response { return admission.Errored(http.StatusBadRequest, errors.New("bad JSON")) }, 0},
		{"/failing", func() admission.Response {
			return admission.Errored(http.StatusInternalServerError, errors.New("cache not synced"))
		}, 1},
		{"/panicking", func() admission.Response { panic("nil map") }, 1},
	} {
		answer := tc.answer
		wh := &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return answer() })}
		s.Register(tc.path, wh)
		if n := testutil.CollectAndCount(admissionErrors, "keelson_webhook_admission_errors_total"); n == 0 {
			t.Fatalf("%s: no series once registered, want one at 0", tc.path)
		}
		before := testutil.ToFloat64(admissionErrors.WithLabelValues(tc.path))
		resp := wh.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "1"}})
		if tc.path == "/panicking" && (resp.Result == nil || resp.Result.Code != http.StatusInternalServerError) {
			t.Fatalf("a panic was answered %+v, want the 500 controller-runtime makes of it", resp.Result)
		}
		if got := testutil.ToFloat64(admissionErrors.WithLabelValues(tc.path)) - before; got != tc.counted {
			t.Errorf("%s: counted %v errors, want %v", tc.path, got, tc.counted)
		}
	}
}
