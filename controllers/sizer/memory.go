package sizer

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
)

// resizeSupport remembers whether the apiserver serves the pods' resize subresource (Kubernetes 1.33 and later).
// The answer is asked once and kept; a failure to ask is not kept, so the next pass asks again.
type resizeSupport struct {
	mu        sync.Mutex
	known     bool
	supported bool
}

// check returns the remembered answer, asking discovery when there is none yet.
func (s *resizeSupport) check(d discovery.DiscoveryInterface) (bool, error) {
	if d == nil {
		return true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known {
		return s.supported, nil
	}
	list, err := d.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, fmt.Errorf("asking the apiserver whether pods can be resized in place: %w", err)
	}
	for _, r := range list.APIResources {
		if r.Name == "pods/resize" {
			s.supported = true
		}
	}
	s.known = true
	return s.supported, nil
}

// vpaPresence remembers when the cluster was last found without the vertical pod autoscaler's API, and each
// namespace's last list of them.
type vpaPresence struct {
	mu     sync.Mutex
	absent time.Time
	lists  map[string]vpaList
}

// vpaList is a namespace's vertical pod autoscalers, as listed at.
type vpaList struct {
	at    time.Time
	items []unstructured.Unstructured
}

// infeasibleEvictions counts a sizer's evictions at one generation.
type infeasibleEvictions struct {
	generation int64
	count      int
}

// envCheck is the answer of reclaimRuntimeEnv for one generation of a workload.
type envCheck struct {
	generation int64
	unowned    fieldSet
}
