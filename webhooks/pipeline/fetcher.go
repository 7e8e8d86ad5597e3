package pipeline

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// The fetcher webhook sees the creation of step pods only (the chart selects pods labelled with their pipeline) and
// never blocks one (failurePolicy Ignore: a pod it cannot answer for runs the fetcher its Deployment holds).
// +kubebuilder:webhook:path=/mutate-v1-pod-model-fetcher,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=mpod-fetcher.inference.keelson.dev,admissionReviewVersions=v1

// fetcherPath is the fetcher webhook's path, as the marker above gives it.
const fetcherPath = "/mutate-v1-pod-model-fetcher"

// RegisterFetcher serves the fetcher webhook: a model-fetching step's new pod runs f, the fetcher of the controller
// that serves it, whatever fetcher its Deployment was written with. A Deployment keeps its fetcher across
// upgrades so that an upgrade restarts no step; its pods created after the upgrade take the new one here.
func RegisterFetcher(mgr ctrl.Manager, f pipelinespec.Fetcher) {
	mgr.GetWebhookServer().Register(fetcherPath, &admission.Webhook{Handler: FetcherHandler{Fetcher: f,
		Decoder: admission.NewDecoder(mgr.GetScheme())}})
}

// FetcherHandler gives the fetch and hold containers of a pod being created today's fetcher.
type FetcherHandler struct {
	// Fetcher is today's fetcher.
	Fetcher pipelinespec.Fetcher
	// Decoder decodes the pod.
	Decoder admission.Decoder
}

// Handle implements admission.Handler. It admits every pod: one without fetch or hold containers, or one it cannot
// read, unchanged (an answer that refused would block the pod, which failurePolicy Ignore does not cover).
func (h FetcherHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := h.Decoder.DecodeRaw(req.Object, &pod); err != nil {
		return admission.Allowed("left unchanged: " + err.Error())
	}
	if !h.Fetcher.Refresh(&pod.Spec) {
		return admission.Allowed("")
	}
	b, err := json.Marshal(&pod)
	if err != nil {
		return admission.Allowed("left unchanged: " + err.Error())
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, b)
}
