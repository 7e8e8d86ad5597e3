package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Counts are what a controller did through its client: the test asserts on them (zero writes in steady state,
// creations per retry).
type Counts struct {
	// Writes counts creates, updates, patches, applies and deletes of any object, subresources included.
	Writes atomic.Int64
	// Creates counts Create calls, failed ones included.
	Creates atomic.Int64
	// Gets counts Get calls of objects for which IsReconciled returns true: one per reconcile of that kind.
	Gets atomic.Int64

	mu     sync.Mutex
	byName map[string]int64
}

// WritesTo is how many writes went to objects of that name (any kind, any namespace).
func (n *Counts) WritesTo(name string) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byName[name]
}

func (n *Counts) count(name string) {
	n.Writes.Add(1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byName == nil {
		n.byName = map[string]int64{}
	}
	n.byName[name]++
}

// CountingClient wraps c so that every call is counted in the returned Counts. isReconciled says which objects'
// Gets count as reconciles (the object a controller's Reconcile reads first).
func CountingClient(c client.Client, isReconciled func(client.Object) bool) (client.Client, *Counts) {
	n := &Counts{}
	return interceptor.NewClient(noWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if isReconciled(obj) {
				n.Gets.Add(1)
			}
			return cl.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.count(obj.GetName())
			n.Creates.Add(1)
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n.count(obj.GetName())
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			n.count(obj.GetName())
			return cl.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			n.count(applyName(obj))
			return cl.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n.count(obj.GetName())
			return cl.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			n.count(obj.GetName())
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			n.count(obj.GetName())
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}), n
}

// applyName reads the name out of an apply configuration (they all marshal their metadata).
func applyName(obj runtime.ApplyConfiguration) string {
	b, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	var m struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Metadata.Name
}

// noWatch lets a manager's (cached) client stand where interceptor wants a client.WithWatch; controllers never
// call Watch through it.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported through a counting client")
}
