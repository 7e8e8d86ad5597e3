//go:build integration

package sizer_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/sizer"
	"github.com/keelson-dev/keelson/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.RunTests(m, testenv.Options{AddToScheme: []func(*runtime.Scheme) error{sizerv1alpha1.AddToScheme}},
		func(e *testenv.Env) { env = e }))
}

const (
	timeout = 20 * time.Second
	poll    = 25 * time.Millisecond
)

// startController runs the sizer in a manager with the binary's cache options; the counts are its API calls.
func startController(t *testing.T) *testenv.Counts {
	t.Helper()
	_, counts := env.StartCountedManager(t, sizer.CacheOptions(), func(o client.Object) bool {
		_, ok := o.(*sizerv1alpha1.WorkloadSizer)
		return ok
	}, func(mgr ctrl.Manager, c client.Client) error {
		return (&sizer.Reconciler{Client: c}).SetupWithManager(mgr)
	})
	return counts
}

type scenario struct {
	t   *testing.T
	g   Gomega
	ctx context.Context
	ns  string
}

func newScenario(t *testing.T) *scenario {
	return &scenario{t: t, g: NewWithT(t), ctx: context.Background(), ns: env.Namespace(t, "wls")}
}

// deployment creates a Deployment the way a user or a GitOps tool would, as field manager `manager`.
func (s *scenario) deployment(name, manager string, replicas *int32, containers ...corev1.Container) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: map[string]string{"team": "a"}},
		Spec: appsv1.DeploymentSpec{Replicas: replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: containers}}}}
	s.g.Expect(env.Client.Create(s.ctx, d, client.FieldOwner(manager))).To(Succeed())
	return d
}

func (s *scenario) sizer(name string, spec sizerv1alpha1.WorkloadSizerSpec) *sizerv1alpha1.WorkloadSizer {
	w := &sizerv1alpha1.WorkloadSizer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}, Spec: spec}
	s.g.Expect(env.Client.Create(s.ctx, w)).To(Succeed())
	return w
}

func (s *scenario) get(name string) *sizerv1alpha1.WorkloadSizer {
	var w sizerv1alpha1.WorkloadSizer
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &w)).To(Succeed())
	return &w
}

func (s *scenario) getDeployment(name string) *appsv1.Deployment {
	var d appsv1.Deployment
	s.g.Expect(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &d)).To(Succeed())
	return &d
}

// envOf is the environment of the first container of the Deployment name, by variable.
func (s *scenario) envOf(name string) func() map[string]string {
	return func() map[string]string {
		out := map[string]string{}
		for _, e := range s.getDeployment(name).Spec.Template.Spec.Containers[0].Env {
			out[e.Name] = e.Value
		}
		return out
	}
}

func (s *scenario) update(name string, mutate func(*sizerv1alpha1.WorkloadSizer)) {
	s.g.Eventually(func() error {
		w := s.get(name)
		mutate(w)
		return env.Client.Update(s.ctx, w)
	}, timeout, poll).Should(Succeed())
}

// condition is a poll-friendly "status/reason" of one condition of the sizer.
func (s *scenario) condition(name, t string) func() string {
	return func() string {
		c := meta.FindStatusCondition(s.get(name).Status.Conditions, t)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// pod creates a pod with labels, as the Deployment's ReplicaSet would.
func (s *scenario) pod(name string, labels map[string]string, containers ...corev1.Container) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: labels},
		Spec: corev1.PodSpec{Containers: containers}}
	s.g.Expect(env.Client.Create(s.ctx, p)).To(Succeed())
	return p
}
