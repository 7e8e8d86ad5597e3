//go:build integration

package sizer_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/controllers/sizer"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func target(name string) *sizerv1alpha1.TargetRef {
	return &sizerv1alpha1.TargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

// The simplest sizer, size + image: the Deployment is created, owned and kept at size, and the status lists
// the pods.
func TestCreatesTheTargetWhenMissing(t *testing.T) {
	s := newScenario(t)
	startController(t)
	w := s.sizer("hello", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("hello"), Image: "nginx:1.27", Size: ptr.To[int32](3)})

	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "hello"}, &appsv1.Deployment{})
	}, timeout, poll).Should(Succeed())
	d := s.getDeployment("hello")
	s.g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
	s.g.Expect(metav1.IsControlledBy(d, w)).To(BeTrue(), "the created target is owned, so it is collected with the sizer")
	s.g.Expect(d.Spec.Template.Spec.Containers).To(HaveLen(1))
	s.g.Expect(d.Spec.Template.Spec.Containers[0].Name).To(Equal("app"))
	s.g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx:1.27"))
	s.g.Expect(d.Labels).To(HaveKeyWithValue(sizerv1alpha1.NameLabel, "hello"))

	// Pods the Deployment's ReplicaSet would create: their names reach the status.
	labels := d.Spec.Template.Labels
	s.pod("hello-b", labels, corev1.Container{Name: "app", Image: "nginx:1.27"})
	s.pod("hello-a", labels, corev1.Container{Name: "app", Image: "nginx:1.27"})
	s.pod("unrelated", map[string]string{"app": "other"}, corev1.Container{Name: "app", Image: "x"})
	s.g.Eventually(func() []string { return s.get("hello").Status.Pods }, timeout, poll).Should(Equal([]string{"hello-a", "hello-b"}))
	st := s.get("hello").Status
	s.g.Expect(st.PodCount).To(Equal(int32(2)))
	s.g.Expect(st.Selector).To(Equal(sizerv1alpha1.NameLabel + "=hello"))
	s.g.Expect(s.condition("hello", sizerv1alpha1.ConditionTargetFound)()).To(Equal("True/" + sizerv1alpha1.ReasonCreated))
	s.g.Expect(s.condition("hello", sizerv1alpha1.ConditionSized)()).To(Equal("True/" + sizerv1alpha1.ReasonApplied))
	s.g.Expect(s.condition("hello", sizerv1alpha1.ConditionReady)()).To(Equal("False/" + sizerv1alpha1.ReasonNotReady))
}

// Without a template the sizer waits for the target, says so, and picks it up when it appears.
func TestTargetNotFound(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	// The Deployment's creator will own its (defaulted) replicas: the sizer takes them over by request.
	s.sizer("later", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("later"), Size: ptr.To[int32](2), ForceOwnership: true})
	s.g.Eventually(s.condition("later", sizerv1alpha1.ConditionTargetFound), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonTargetNotFound))
	s.g.Expect(conditionMessage(s.get("later"), sizerv1alpha1.ConditionTargetFound)).To(ContainSubstring("Deployment later does not exist"))
	writes := c.Writes.Load()
	s.g.Consistently(c.Writes.Load, time.Second, poll).Should(Equal(writes), "no error loop while the target is missing")

	s.deployment("later", "user", nil, corev1.Container{Name: "app", Image: "x"})
	s.g.Eventually(s.condition("later", sizerv1alpha1.ConditionTargetFound), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonFound))
	s.g.Eventually(func() int32 { return *s.getDeployment("later").Spec.Replicas }, timeout, poll).Should(Equal(int32(2)))
}

func conditionMessage(w *sizerv1alpha1.WorkloadSizer, t string) string {
	for _, c := range w.Status.Conditions {
		if c.Type == t {
			return c.Message
		}
	}
	return ""
}

// The scale subresource drives spec.size, as `kubectl scale wls/x --replicas=N` and HPAs do.
func TestScaleSubresource(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.sizer("web", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("web"), Image: "nginx", Size: ptr.To[int32](1)})
	s.g.Eventually(s.condition("web", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))

	w := s.get("web")
	var scale autoscalingv1.Scale
	s.g.Expect(env.Client.SubResource("scale").Get(s.ctx, w, &scale)).To(Succeed())
	s.g.Expect(scale.Status.Selector).To(Equal(sizerv1alpha1.NameLabel + "=web"))
	scale.Spec.Replicas = 5
	s.g.Expect(env.Client.SubResource("scale").Update(s.ctx, w, client.WithSubResourceBody(&scale))).To(Succeed())
	s.g.Expect(*s.get("web").Spec.Size).To(Equal(int32(5)))
	s.g.Eventually(func() int32 { return *s.getDeployment("web").Spec.Replicas }, timeout, poll).Should(Equal(int32(5)))
}

// Resources and runtime settings reach an existing Deployment; nothing else of it changes.
func TestResourcesAndRuntimeOnAnExistingDeployment(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("api", "user", nil,
		corev1.Container{Name: "app", Image: "api:v1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-Xss1m"}, {Name: "LOG", Value: "debug"}}},
		corev1.Container{Name: "proxy", Image: "proxy:v1"})
	before := s.getDeployment("api")
	s.sizer("api", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("api"), ForceOwnership: true,
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "500m", "memory", "512Mi"),
			Limits: rl("cpu", "2", "memory", "1Gi"), ControlledValues: sizerv1alpha1.RequestsAndLimits}},
		Runtime: &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{"go", "java"}, MemoryHeadroomPercent: ptr.To[int32](10)}})

	s.g.Eventually(s.condition("api", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))
	d := s.getDeployment("api")
	app := d.Spec.Template.Spec.Containers[0]
	s.g.Expect(app.Resources.Requests.Cpu().String()).To(Equal("500m"))
	s.g.Expect(app.Resources.Limits.Memory().String()).To(Equal("1Gi"))
	env := map[string]string{}
	for _, e := range app.Env {
		env[e.Name] = e.Value
	}
	s.g.Expect(env).To(Equal(map[string]string{"LOG": "debug", "GOMAXPROCS": "2", "GOMEMLIMIT": "921MiB",
		"JAVA_TOOL_OPTIONS": "-Xss1m", "JDK_JAVA_OPTIONS": "-XX:ActiveProcessorCount=2 -XX:MaxRAMPercentage=67.5"}),
		"the user's JAVA_TOOL_OPTIONS is theirs: the sizer's flags go to the JVM's other options variable")
	// Untouched: the other container, ports, image, labels, replicas.
	s.g.Expect(d.Spec.Template.Spec.Containers[1]).To(Equal(before.Spec.Template.Spec.Containers[1]))
	s.g.Expect(app.Ports).To(Equal(before.Spec.Template.Spec.Containers[0].Ports))
	s.g.Expect(app.Image).To(Equal("api:v1"))
	s.g.Expect(d.Labels).To(Equal(before.Labels))
	s.g.Expect(*d.Spec.Replicas).To(Equal(*before.Spec.Replicas))
	s.g.Expect(s.get("api").Status.Resources).To(HaveLen(1))
}

// Another field manager owns replicas: the sizer reports the conflict instead of fighting, until told to force.
func TestConflictIsReportedNotFought(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("shop", "gitops-controller", ptr.To[int32](2), corev1.Container{Name: "app", Image: "shop:v1"})
	s.sizer("shop", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("shop"), Size: ptr.To[int32](4)})

	s.g.Eventually(s.condition("shop", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonConflict))
	msg := conditionMessage(s.get("shop"), sizerv1alpha1.ConditionConflict)
	s.g.Expect(msg).To(ContainSubstring(".spec.replicas"))
	s.g.Expect(msg).To(ContainSubstring("gitops-controller"))
	s.g.Consistently(func() int32 { return *s.getDeployment("shop").Spec.Replicas }, time.Second, poll).Should(Equal(int32(2)))

	s.update("shop", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.ForceOwnership = true })
	s.g.Eventually(func() int32 { return *s.getDeployment("shop").Spec.Replicas }, timeout, poll).Should(Equal(int32(4)))
	s.g.Eventually(s.condition("shop", sizerv1alpha1.ConditionConflict), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonNoConflict))
}

// The disruption budget follows the profile and the size, and is never created when it would block drains.
func TestDisruptionBudget(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.sizer("pdb", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("pdb"), Image: "x", Size: ptr.To[int32](5),
		Disruption: &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileStateless}})
	getPDB := func() (*policyv1.PodDisruptionBudget, error) {
		var p policyv1.PodDisruptionBudget
		err := env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "pdb"}, &p)
		return &p, err
	}
	s.g.Eventually(func() error { _, err := getPDB(); return err }, timeout, poll).Should(Succeed())
	p, _ := getPDB()
	s.g.Expect(p.Spec.MinAvailable.String()).To(Equal("60%"))
	s.g.Expect(*p.Spec.UnhealthyPodEvictionPolicy).To(Equal(policyv1.AlwaysAllow))
	s.g.Expect(p.Spec.Selector.MatchLabels).To(Equal(map[string]string{sizerv1alpha1.NameLabel: "pdb"}))
	s.g.Eventually(func() string {
		if db := s.get("pdb").Status.DisruptionBudget; db != nil {
			return db.Name
		}
		return ""
	}, timeout, poll).Should(Equal("pdb"), "the status names the budget")

	// One replica: 60% of 1 leaves nothing to evict; the budget goes and the condition says why.
	s.update("pdb", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Size = ptr.To[int32](1) })
	s.g.Eventually(func() bool { _, err := getPDB(); return apierrors.IsNotFound(err) }, timeout, poll).Should(BeTrue())
	s.g.Eventually(s.condition("pdb", sizerv1alpha1.ConditionBudgetSafe), timeout, poll).Should(Equal("False/" + sizerv1alpha1.ReasonBudgetWouldBlock))
	s.g.Expect(conditionMessage(s.get("pdb"), sizerv1alpha1.ConditionBudgetSafe)).To(ContainSubstring("every node drain would wait forever"))

	// Quorum: one at a time, even with one replica.
	s.update("pdb", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Disruption.Profile = sizerv1alpha1.ProfileQuorum })
	s.g.Eventually(func() string {
		p, err := getPDB()
		if err != nil || p.Spec.MaxUnavailable == nil {
			return ""
		}
		return p.Spec.MaxUnavailable.String()
	}, timeout, poll).Should(Equal("1"))

	s.update("pdb", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Disruption = nil })
	s.g.Eventually(func() bool { _, err := getPDB(); return apierrors.IsNotFound(err) }, timeout, poll).Should(BeTrue())
}

// expose.service and expose.ingress create and remove a Service and an Ingress.
func TestExposeToggles(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.sizer("site", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("site"), Image: "nginx", Size: ptr.To[int32](1),
		Expose: &sizerv1alpha1.ExposeSpec{Service: &sizerv1alpha1.ServiceExpose{Enabled: true, Port: 80, TargetPort: 8080, Type: corev1.ServiceTypeClusterIP},
			Ingress: &sizerv1alpha1.IngressExpose{Enabled: true, Host: "site.example", Path: "/"}}})
	key := client.ObjectKey{Namespace: s.ns, Name: "site"}
	s.g.Eventually(func() error { return env.Client.Get(s.ctx, key, &networkingv1.Ingress{}) }, timeout, poll).Should(Succeed())
	var svc corev1.Service
	s.g.Expect(env.Client.Get(s.ctx, key, &svc)).To(Succeed())
	s.g.Expect(svc.Spec.Selector).To(Equal(map[string]string{sizerv1alpha1.NameLabel: "site"}))
	s.g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(80)))
	s.g.Expect(svc.Spec.Ports[0].TargetPort.IntValue()).To(Equal(8080))
	var ing networkingv1.Ingress
	s.g.Expect(env.Client.Get(s.ctx, key, &ing)).To(Succeed())
	s.g.Expect(ing.Spec.Rules[0].Host).To(Equal("site.example"))
	s.g.Expect(ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name).To(Equal("site"))

	s.update("site", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Expose.Ingress.Enabled = false })
	s.g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(s.ctx, key, &networkingv1.Ingress{})) }, timeout, poll).Should(BeTrue())
	s.g.Expect(env.Client.Get(s.ctx, key, &corev1.Service{})).To(Succeed(), "the Service stays")
	s.update("site", func(w *sizerv1alpha1.WorkloadSizer) { w.Spec.Expose.Service.Enabled = false })
	s.g.Eventually(func() bool { return apierrors.IsNotFound(env.Client.Get(s.ctx, key, &corev1.Service{})) }, timeout, poll).Should(BeTrue())
}

// Deleting the sizer of a workload it did not create leaves the workload as it is and releases the fields.
func TestDeletionReleasesAReferencedTarget(t *testing.T) {
	s := newScenario(t)
	startController(t)
	s.deployment("keep", "user", nil, corev1.Container{Name: "app", Image: "x"})
	s.sizer("keep", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("keep"), Size: ptr.To[int32](3), ForceOwnership: true,
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "100m")}}})
	s.g.Eventually(func() int32 { return *s.getDeployment("keep").Spec.Replicas }, timeout, poll).Should(Equal(int32(3)))
	managers := func() []string {
		var out []string
		for _, m := range s.getDeployment("keep").ManagedFields {
			out = append(out, m.Manager)
		}
		return out
	}
	s.g.Expect(managers()).To(ContainElement(sizer.FieldOwner + "/keep"))

	s.g.Expect(env.Client.Delete(s.ctx, s.get("keep"))).To(Succeed())
	s.g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "keep"}, &sizerv1alpha1.WorkloadSizer{}))
	}, timeout, poll).Should(BeTrue(), "the finalizer is removed")
	d := s.getDeployment("keep")
	s.g.Expect(*d.Spec.Replicas).To(Equal(int32(3)), "values stay")
	s.g.Expect(d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()).To(Equal("100m"))
	s.g.Expect(managers()).NotTo(ContainElement(HavePrefix(sizer.FieldOwner)), "the sizer's ownership is released")
}

// In steady state the sizer writes nothing, even when woken up.
func TestSteadyStateWritesNothing(t *testing.T) {
	s := newScenario(t)
	c := startController(t)
	s.sizer("calm", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("calm"), Image: "nginx", Size: ptr.To[int32](2),
		Resources:  []sizerv1alpha1.ContainerResources{{ContainerName: "*", Requests: rl("cpu", "100m"), Limits: rl("cpu", "1", "memory", "256Mi")}},
		Runtime:    &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{"go"}, MemoryHeadroomPercent: ptr.To[int32](10)},
		Disruption: &sizerv1alpha1.DisruptionSpec{Profile: sizerv1alpha1.ProfileQuorum},
		Expose:     &sizerv1alpha1.ExposeSpec{Service: &sizerv1alpha1.ServiceExpose{Enabled: true, Port: 80, TargetPort: 80, Type: corev1.ServiceTypeClusterIP}}})
	s.g.Eventually(s.condition("calm", sizerv1alpha1.ConditionSized), timeout, poll).Should(Equal("True/" + sizerv1alpha1.ReasonApplied))
	s.g.Eventually(func() error {
		return env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: "calm"}, &corev1.Service{})
	}, timeout, poll).Should(Succeed())
	// Let the last status write land, then count from a quiet point.
	var writes int64 = -1
	s.g.Eventually(func() bool {
		w := c.Writes.Load()
		quiet := w == writes
		writes = w
		return quiet
	}, timeout, 500*time.Millisecond).Should(BeTrue())

	gets := c.Gets.Load()
	d := s.getDeployment("calm")
	d.Annotations["touched"] = "yes"
	s.g.Expect(env.Client.Update(s.ctx, d)).To(Succeed())
	s.g.Eventually(c.Gets.Load, timeout, poll).Should(BeNumerically(">", gets), "the Deployment update woke the sizer")
	s.g.Consistently(c.Writes.Load, 2*time.Second, poll).Should(Equal(writes), "writes in steady state")
}

// InPlace resizes running pods through their resize subresource and leaves the template alone.
func TestInPlaceResize(t *testing.T) {
	s := newScenario(t)
	startController(t)
	app := corev1.Container{Name: "app", Image: "x", Resources: corev1.ResourceRequirements{
		Requests: rl("cpu", "100m", "memory", "64Mi"), Limits: rl("cpu", "200m", "memory", "128Mi")}}
	d := s.deployment("live", "user", ptr.To[int32](1), app)
	pod := s.pod("live-1", d.Spec.Template.Labels, app)
	s.sizer("live", sizerv1alpha1.WorkloadSizerSpec{TargetRef: target("live"), UpdateMode: sizerv1alpha1.UpdateModeInPlace,
		Resources: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "150m"), Limits: rl("cpu", "300m"),
			ControlledValues: sizerv1alpha1.RequestsAndLimits}}})

	s.g.Eventually(func() string {
		var p corev1.Pod
		if err := env.Client.Get(s.ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return err.Error()
		}
		return p.Spec.Containers[0].Resources.Limits.Cpu().String()
	}, timeout, poll).Should(Equal("300m"))
	s.g.Consistently(func() string {
		return s.getDeployment("live").Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().String()
	}, time.Second, poll).Should(Equal("200m"), "InPlace must not change the template (that would restart every pod)")
}
