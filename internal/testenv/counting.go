package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Counts are what a controller did through the apiserver: the test asserts on them (zero writes in steady state,
// creations per retry).
type Counts struct {
	// Writes counts every request that is not a read (POST, PUT, PATCH, DELETE), failed ones included: creates,
	// updates, patches and applies of objects and of their subresources, deletes and delete-collections, and the
	// events the controller records. It is counted at the HTTP transport, so no client or call is missed.
	Writes atomic.Int64
	// Creates counts Create calls through the controller's client, failed ones included (events are not among them:
	// the controllers record them through the manager's client).
	Creates atomic.Int64
	// Gets counts Get calls of objects for which IsReconciled returns true: one per reconcile of that kind.
	Gets atomic.Int64

	mu     sync.Mutex
	byName map[string]int64
}

// WritesTo is how many writes went to objects of that name (any kind, any namespace, subresources included).
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

// transport wraps a rest config's transport so that every write request is counted.
func (n *Counts) transport(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			n.count(writtenName(req))
		}
		return rt.RoundTrip(req)
	})
}

// client wraps c so that creates and reconciles are counted; writes are counted by the transport.
func (n *Counts) client(c client.Client, isReconciled func(client.Object) bool) client.Client {
	return interceptor.NewClient(noWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if isReconciled(obj) {
				n.Gets.Add(1)
			}
			return cl.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.Creates.Add(1)
			return cl.Create(ctx, obj, opts...)
		},
	})
}

// writtenName is the name of the object a write request is about: the path segment after the resource (before
// any subresource), or for a create, the name in the body. A delete-collection names no object ("").
func writtenName(req *http.Request) string {
	// /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]] or /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE[/NAME[/SUB]]
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) > 0 && parts[0] == "api":
		parts = parts[min(2, len(parts)):]
	case len(parts) > 0 && parts[0] == "apis":
		parts = parts[min(3, len(parts)):]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	if len(parts) >= 2 {
		return parts[1]
	}
	if req.Method == http.MethodPost && req.GetBody != nil {
		return bodyName(req)
	}
	return ""
}

// bodyName reads metadata.name from a create's body without consuming it. Built-in kinds travel as protobuf,
// custom resources as JSON.
func bodyName(req *http.Request) string {
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer func() { _ = body.Close() }()
	b, err := io.ReadAll(body)
	if err != nil {
		return ""
	}
	if strings.Contains(req.Header.Get("Content-Type"), "protobuf") {
		obj, _, err := protobufCodec.Decode(b, nil, nil)
		if err != nil {
			return ""
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return ""
		}
		return m.GetName()
	}
	var m struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Metadata.Name
}

// protobufCodec decodes the built-in kinds a controller creates.
var protobufCodec = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// roundTripFunc lets a function stand where an http.RoundTripper is wanted.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// noWatch lets a manager's (cached) client stand where interceptor wants a client.WithWatch; controllers never
// call Watch through it.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported through a counting client")
}
