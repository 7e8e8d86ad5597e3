package testenv

import (
	"context"
	"errors"
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
}

// CountingClient wraps c so that every call is counted in the returned Counts. isReconciled says which objects'
// Gets count as reconciles (the object a controller's Reconcile reads first).
func CountingClient(c client.Client, isReconciled func(client.Object) bool) (client.Client, *Counts) {
	n := &Counts{}
	write := func() { n.Writes.Add(1) }
	return interceptor.NewClient(noWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if isReconciled(obj) {
				n.Gets.Add(1)
			}
			return cl.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			write()
			n.Creates.Add(1)
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			write()
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			write()
			return cl.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			write()
			return cl.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			write()
			return cl.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			write()
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			write()
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}), n
}

// noWatch lets a manager's (cached) client stand where interceptor wants a client.WithWatch; controllers never
// call Watch through it.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported through a counting client")
}
