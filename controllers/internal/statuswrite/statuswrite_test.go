package statuswrite

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	daemonsetv1alpha1 "github.com/keelson-dev/keelson/apis/daemonset/v1alpha1"
	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

type budget struct {
	Name    string `json:"name"`
	Allowed int32  `json:"allowed,omitempty"`
}

type status struct {
	ObservedGeneration int64    `json:"observedGeneration,omitempty"`
	Ready              int32    `json:"ready"`
	Available          int32    `json:"available,omitempty"`
	Items              []string `json:"items,omitempty"`
	Budget             *budget  `json:"budget,omitempty"`
	Inline             budget   `json:"inline"`
	Hidden             string   `json:"-"`
}

func (s *status) DeepCopy() *status {
	out := *s
	out.Items = append([]string(nil), s.Items...)
	if s.Budget != nil {
		b := *s.Budget
		out.Budget = &b
	}
	return &out
}

// Every field of the status, and of every struct in it, is stated: a value, or null for what marshals away when
// zero, so that nothing stored survives that the new status lacks.
func TestPatchStatesEveryField(t *testing.T) {
	for name, tc := range map[string]struct {
		in   any
		want string
	}{
		"zero": {status{}, `{"status":{"available":null,"budget":null,"inline":{"allowed":null,"name":""},` +
			`"items":null,"observedGeneration":null,"ready":0}}`},
		"pointer": {&status{ObservedGeneration: 3, Available: 2}, `{"status":{"available":2,"budget":null,` +
			`"inline":{"allowed":null,"name":""},"items":null,"observedGeneration":3,"ready":0}}`},
		"nested": {status{Budget: &budget{Name: "b"}, Inline: budget{Allowed: 1}, Items: []string{"x"}},
			`{"status":{"available":null,"budget":{"allowed":null,"name":"b"},"inline":{"allowed":1,"name":""},` +
				`"items":["x"],"observedGeneration":null,"ready":0}}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Patch(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("patch (-want +got):\n%s", d)
			}
		})
	}
}

// A status written is current until the cache shows that write or a later one (then the cache is, and what another
// writer did since is seen); for that object only (a new object of the same name has another UID); as a copy a pass
// may change. The object written is not changed by the write.
func TestWrittenIsCurrentUntilTheCacheCatchesUp(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u1"}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(pod).WithStatusSubresource(pod).Build()
	var w Written[*corev1.PodStatus]
	cached := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cached); err != nil {
		t.Fatal(err)
	}
	if got := w.Current(cached, &cached.Status); got != &cached.Status {
		t.Fatalf("nothing written: got %+v, want the cached status", got)
	}

	before := cached.DeepCopy()
	st := &corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := w.Write(ctx, c, cached, st); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, cached); d != "" {
		t.Fatalf("the write changed the object written (-before +after):\n%s", d)
	}
	st.Conditions[0].Status = corev1.ConditionFalse // the caller's status, changed after the write

	got := w.Current(cached, &cached.Status)
	if got.Phase != corev1.PodRunning || got.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("the cache lags the write: current = %+v, want the status written, as written", got)
	}
	got.Conditions[0].Status = corev1.ConditionUnknown // a pass changing its copy
	if again := w.Current(cached, &cached.Status); again.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("a pass's change reached what is remembered: %+v", again)
	}
	other := cached.DeepCopy()
	other.UID = "u2"
	if got := w.Current(other, &other.Status); got != &other.Status {
		t.Fatalf("another object of the same name: got %+v, want its cached status", got)
	}

	live := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil {
		t.Fatal(err)
	}
	if live.Status.Phase != corev1.PodRunning {
		t.Fatalf("stored status %+v, want the one written", live.Status)
	}
	live.Status.Message = "written by someone else since"
	if got := w.Current(live, &live.Status); got != &live.Status || w.Len() != 0 {
		t.Fatalf("the cache caught up: got %+v (%d remembered), want the cached status and nothing remembered", got, w.Len())
	}
}

// A write that fails for a passing reason (a timeout, a busy apiserver) leaves what was remembered: that status was
// stored, and starting from an older cached one would date its conditions' transitions anew and tell them again. A
// write refused because the object is gone forgets it. The apiserver's error is kept.
func TestAFailedWriteKeepsTheLastStatusWritten(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u1", ResourceVersion: "1"}}
	var fail error
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(pod).WithStatusSubresource(pod).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if fail != nil {
					return fail
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			}}).Build()
	var w Written[*corev1.PodStatus]
	if err := w.Write(ctx, c, pod, &corev1.PodStatus{Phase: corev1.PodRunning}); err != nil {
		t.Fatal(err)
	}
	fail = apierrors.NewTimeoutError("the apiserver is busy", 1)
	if err := w.Write(ctx, c, pod, &corev1.PodStatus{Phase: corev1.PodFailed}); !apierrors.IsTimeout(err) {
		t.Fatalf("error %v, want the apiserver's timeout", err)
	}
	if got := w.Current(pod, &pod.Status); got.Phase != corev1.PodRunning {
		t.Fatalf("after a failed write: current %+v, want the status last written", got)
	}
	fail = apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, pod.Name)
	if err := w.Write(ctx, c, pod, &corev1.PodStatus{Phase: corev1.PodFailed}); !apierrors.IsNotFound(err) {
		t.Fatalf("error %v, want the apiserver's NotFound", err)
	}
	if w.Len() != 0 {
		t.Fatalf("%d remembered after the object was found gone, want 0", w.Len())
	}
}

func TestNotOlder(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"5", "5", true}, {"6", "5", true}, {"4", "5", false}, {"10", "9", true}, {"9", "10", false},
		{"x", "x", true}, {"y", "x", false}, {"", "5", false},
	} {
		if got := notOlder(tc.a, tc.b); got != tc.want {
			t.Errorf("notOlder(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// Patch states every field of the structs it recurses into; a map (whose stored keys would survive), an embedded
// struct (marshalled inline) or a struct that marshals itself (whose output is no set of its fields) there would
// break that. The three kinds' statuses have none.
func TestStatusTypesHoldOnlyWhatPatchStates(t *testing.T) {
	marshaler := reflect.TypeFor[json.Marshaler]()
	var walk func(path string, t reflect.Type)
	walk = func(path string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case !f.IsExported():
			case f.Anonymous:
				t.Errorf("%s.%s is embedded", path, f.Name)
			case ft.Kind() == reflect.Map:
				t.Errorf("%s.%s is a map", path, f.Name)
			case ft.Kind() == reflect.Struct && (ft.Implements(marshaler) || reflect.PointerTo(ft).Implements(marshaler)):
				// Both marshal as one JSON scalar (a string; an int or a string), which a merge patch states whole.
				if ft != reflect.TypeFor[metav1.Time]() && ft != reflect.TypeFor[intstr.IntOrString]() {
					t.Errorf("%s.%s marshals itself", path, f.Name)
				}
			case ft.Kind() == reflect.Struct:
				walk(path+"."+f.Name, ft)
			}
		}
	}
	walk("DaemonSetStatus", reflect.TypeFor[daemonsetv1alpha1.DaemonSetStatus]())
	walk("WorkloadSizerStatus", reflect.TypeFor[sizerv1alpha1.WorkloadSizerStatus]())
	walk("PipelineStatus", reflect.TypeFor[inferencev1alpha1.PipelineStatus]())
}
