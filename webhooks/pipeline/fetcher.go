package pipeline

import (
	"context"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
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

// Handle implements admission.Handler. It admits every pod, whatever happens: a pod without fetch or hold
// containers, or one it cannot read, unchanged (a refusal, even an error, would block the pod: failurePolicy Ignore
// covers only a webhook that does not answer). The patch replaces the fetch and hold containers' image and the
// fetch's env, and nothing else: the pod is never written back whole (fields this build does not know would go).
func (h FetcherHandler) Handle(_ context.Context, req admission.Request) (resp admission.Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = admission.Allowed(fmt.Sprintf("left unchanged: %v", r))
		}
	}()
	var pod corev1.Pod
	if err := h.Decoder.DecodeRaw(req.Object, &pod); err != nil {
		return admission.Allowed("left unchanged: " + err.Error())
	}
	before := pod.DeepCopy()
	if !h.Fetcher.Refresh(&pod.Spec) {
		return admission.Allowed("")
	}
	var ops []jsonpatch.JsonPatchOperation
	for i, c := range pod.Spec.InitContainers {
		old := before.Spec.InitContainers[i]
		at := fmt.Sprintf("/spec/initContainers/%d", i)
		if c.Image != old.Image {
			ops = append(ops, jsonpatch.NewOperation("replace", at+"/image", c.Image))
		}
		if c.Name != pipelinespec.FetchContainer || apiequality.Semantic.DeepEqual(c.Env, old.Env) {
			continue
		}
		switch {
		case len(c.Env) == 0:
			ops = append(ops, jsonpatch.NewOperation("remove", at+"/env", nil))
		case len(old.Env) == 0:
			ops = append(ops, jsonpatch.NewOperation("add", at+"/env", c.Env))
		default:
			ops = append(ops, jsonpatch.NewOperation("replace", at+"/env", c.Env))
		}
	}
	return admission.Patched("the running controller's model fetcher", ops...)
}
