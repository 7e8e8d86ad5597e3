package manager

import (
	"context"
	"errors"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// cacheSyncTimeout bounds how long one /readyz request waits on the informer caches.
const cacheSyncTimeout = time.Second

// cachesSynced is a readiness check that passes once every informer the process has started has synced, so a
// replica takes webhook traffic or reports Ready only when its view of the cluster is complete.
func cachesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncTimeout)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced yet")
		}
		return nil
	}
}
