package manager

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// admissionErrors counts the admission requests a webhook answered with an error of its own. controller-runtime
// answers every admission request with HTTP 200 and puts the error in the AdmissionReview, so its
// controller_runtime_webhook_requests_total never shows a failing webhook by its code; this does.
var admissionErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "keelson_webhook_admission_errors_total",
	Help: "Admission requests the webhook answered with an error of its own (a result code of 500 or more, or a panic), by webhook path.",
}, []string{"webhook"})

// Register registers hook at path on the webhook server, counting the errors of an admission webhook in
// keelson_webhook_admission_errors_total under its path (the webhook label controller-runtime's own metrics use),
// and closing the connection after each answer once the server drains (drain.go).
func (s *drainingServer) Register(path string, hook http.Handler) {
	if wh, ok := hook.(*admission.Webhook); ok && wh.Handler != nil {
		wh.Handler = countingHandler{path: path, inner: wh.Handler}
		admissionErrors.WithLabelValues(path) // from zero, so a rate over it has a start
	}
	s.Server.Register(path, closingWhileDraining{draining: &s.draining, inner: hook})
}

// countingHandler counts the errored answers of an admission handler.
type countingHandler struct {
	path  string
	inner admission.Handler
}

// Handle answers as the inner handler does. An answer whose result code is 500 or more is the webhook failing
// (a denial is 403, a request it cannot decode 400: the caller's); a panic is counted and goes on up, where
// admission.Webhook turns it into a 500 as before.
func (h countingHandler) Handle(ctx context.Context, req admission.Request) (resp admission.Response) {
	panicked := true
	defer func() {
		if panicked {
			admissionErrors.WithLabelValues(h.path).Inc()
		}
	}()
	resp = h.inner.Handle(ctx, req)
	panicked = false
	if !resp.Allowed && resp.Result != nil && resp.Result.Code >= http.StatusInternalServerError {
		admissionErrors.WithLabelValues(h.path).Inc()
	}
	return resp
}
