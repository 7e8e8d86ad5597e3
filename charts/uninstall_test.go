package charts_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// finalizerControllers are the controllers that put finalizers on their objects.
var finalizerControllers = []string{"workload-sizer", "pipeline-controller"}

// uninstallJobs maps the controller each pre-delete Job releases to the Job.
func uninstallJobs(t *testing.T, objs []*unstructured.Unstructured) map[string]*batchv1.Job {
	t.Helper()
	jobs := map[string]*batchv1.Job{}
	for _, j := range ofKind[batchv1.Job](t, objs, "Job") {
		if j.Annotations["helm.sh/hook"] == "pre-delete" {
			jobs[j.Labels["app.kubernetes.io/name"]] = j
		}
	}
	return jobs
}

// helm uninstall runs, for each enabled controller with finalizers, a Job from its own image that stops it and takes
// its finalizers off, as the controller's ServiceAccount and with the controller's pod security and placement.
func TestUninstallHookReleasesFinalizers(t *testing.T) {
	g := NewWithT(t)
	tolerations := []any{map[string]any{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}}
	objs := mustRender(t, map[string]any{"global": map[string]any{
		"nodeSelector": map[string]any{"pool": "system"}, "tolerations": tolerations}})
	jobs := uninstallJobs(t, objs)
	g.Expect(jobs).To(HaveLen(len(finalizerControllers)))
	for _, c := range finalizerControllers {
		j := jobs[c+"-uninstall"]
		g.Expect(j).NotTo(BeNil(), "no uninstall Job for %s", c)
		d := deployment(t, objs, c)
		g.Expect(j.Annotations).To(HaveKeyWithValue("helm.sh/hook-delete-policy", "before-hook-creation,hook-succeeded"))
		g.Expect(j.Spec.BackoffLimit).NotTo(BeNil())
		g.Expect(j.Spec.ActiveDeadlineSeconds).To(HaveValue(BeNumerically("<", 300)), "within helm uninstall's default timeout")

		pod, want := j.Spec.Template.Spec, d.Spec.Template.Spec
		for _, labels := range []map[string]string{j.Labels, j.Spec.Template.Labels} {
			selected := true
			for k, v := range d.Spec.Selector.MatchLabels {
				selected = selected && labels[k] == v
			}
			g.Expect(selected).To(BeFalse(), "the hook's pod would count as one of %s's own pods", c)
		}
		g.Expect(pod.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		g.Expect(pod.ServiceAccountName).To(Equal(want.ServiceAccountName))
		g.Expect(pod.SecurityContext).To(Equal(want.SecurityContext))
		g.Expect(pod.NodeSelector).To(Equal(map[string]string{"pool": "system"}))
		g.Expect(pod.NodeSelector).To(Equal(want.NodeSelector))
		g.Expect(pod.Tolerations).To(Equal(want.Tolerations))
		g.Expect(pod.Tolerations).To(HaveLen(1))
		g.Expect(pod.Affinity.NodeAffinity).To(Equal(want.Affinity.NodeAffinity))
		g.Expect(pod.Affinity.PodAntiAffinity).To(BeNil(), "one short-lived pod spreads nothing")

		ctr, wantCtr := pod.Containers[0], want.Containers[0]
		g.Expect(ctr.Image).To(Equal(wantCtr.Image), "the controller's own image")
		g.Expect(ctr.SecurityContext).To(Equal(wantCtr.SecurityContext))
		g.Expect(ctr.Args).To(ContainElement("--release-finalizers=" + d.Name))
		g.Expect(ctr.Env).To(ContainElement(HaveField("Name", "POD_NAMESPACE")))
		g.Expect(ctr.Env[0].ValueFrom.FieldRef.FieldPath).To(Equal("metadata.namespace"))
		g.Expect(ctr.Args).To(ContainElement(fmt.Sprintf("--release-finalizers-replicas=%d", *d.Spec.Replicas)),
			"a failed hook gives the controller its replicas back")
		// A LimitRange that requires limits admits it; a mesh injects no sidecar that would keep the Job running.
		g.Expect(ctr.Resources.Limits).To(HaveKey(corev1.ResourceCPU))
		g.Expect(ctr.Resources.Limits).To(HaveKey(corev1.ResourceMemory))
		g.Expect(j.Spec.Template.Annotations).To(HaveKeyWithValue("sidecar.istio.io/inject", "false"))
		g.Expect(j.Spec.Template.Labels).To(HaveKeyWithValue("sidecar.istio.io/inject", "false"), "Istio reads the label first")
	}
}

// AKS's admissions enforcer leaves alone only webhook configurations that say so: otherwise it rewrites their
// namespaceSelector.
func TestWebhookConfigurationsOptOutOfTheAdmissionsEnforcer(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, nil)
	n := 0
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		for _, o := range objs {
			if o.GetKind() == kind {
				n++
				g.Expect(o.GetAnnotations()).To(HaveKeyWithValue("admissions.enforcer/disabled", "true"), o.GetName())
			}
		}
	}
	g.Expect(n).To(BeNumerically(">", 0))
}

// The hook goes with its controller, and with the value that turns it off; so does the Role's access to the
// controller's Deployment.
func TestUninstallHookFollowsItsValues(t *testing.T) {
	g := NewWithT(t)
	deploymentRules := func(objs []*unstructured.Unstructured) int {
		n := 0
		for _, r := range ofKind[rbacv1.Role](t, objs, "Role") {
			for _, rule := range r.Rules {
				if contains(rule.APIGroups, "apps") {
					n++
				}
			}
		}
		return n
	}
	objs := mustRender(t, map[string]any{"workloadSizer": map[string]any{"enabled": false}})
	g.Expect(uninstallJobs(t, objs)).To(HaveKey("pipeline-controller-uninstall"))
	g.Expect(uninstallJobs(t, objs)).To(HaveLen(1), "no hook for a controller that is off")
	g.Expect(deploymentRules(objs)).To(Equal(2))

	objs = mustRender(t, map[string]any{"crds": map[string]any{"releaseFinalizersOnUninstall": false}})
	g.Expect(uninstallJobs(t, objs)).To(BeEmpty())
	g.Expect(deploymentRules(objs)).To(BeZero(), "the Role keeps no access the hook needed")

	objs = mustRender(t, map[string]any{"crds": map[string]any{"keep": false}})
	g.Expect(uninstallJobs(t, objs)).To(HaveLen(2), "deleting the CRDs waits on the finalizers too")

	_, err := render(map[string]any{"crds": map[string]any{"releaseFinalizersOnUninstall": "yes"}})
	g.Expect(err).To(MatchError(ContainSubstring("schema")))
}

// Each webhook leaves its own controller's writes alone: the hook removes the finalizer while the controller, which
// serves the webhook, is scaled to 0.
func TestWebhooksSkipTheControllersOwnWrites(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"workloadSizer": map[string]any{"serviceAccount": map[string]any{"name": "sizer-sa"}}})
	check := func(name string, conds []admissionregistrationv1.MatchCondition) {
		sa := name // the ServiceAccount is named like the controller's objects
		if name == "keelson-workload-sizer" {
			sa = "sizer-sa"
		}
		g.Expect(conds).To(ContainElement(admissionregistrationv1.MatchCondition{Name: "not-the-controller-itself",
			Expression: `request.userInfo.username != "system:serviceaccount:` + namespace + `:` + sa + `"`}), name)
	}
	n := 0
	for _, w := range ofKind[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration") {
		for _, h := range w.Webhooks {
			check(w.Name, h.MatchConditions)
			n++
		}
	}
	for _, w := range ofKind[admissionregistrationv1.MutatingWebhookConfiguration](t, objs, "MutatingWebhookConfiguration") {
		for _, h := range w.Webhooks {
			check(w.Name, h.MatchConditions)
			n++
		}
	}
	g.Expect(n).To(BeNumerically(">=", 6))
}

// Under Argo CD, which runs no Helm pre-delete hook, the Job is a PostDelete hook: it runs once the application's
// objects are gone, as a ServiceAccount made with it and allowed what the release mode does, and nothing of it is
// a Helm hook (Argo CD would skip it).
func TestUninstallHookUnderArgoCD(t *testing.T) {
	g := NewWithT(t)
	objs := mustRender(t, map[string]any{"crds": map[string]any{"argocdPostDeleteHook": true}})
	hook := func(o *unstructured.Unstructured) bool {
		return o.GetAnnotations()["argocd.argoproj.io/hook"] == "PostDelete"
	}
	for _, c := range finalizerControllers {
		name := "keelson-" + c + "-release-finalizers"
		kinds := map[string]*unstructured.Unstructured{}
		for _, o := range objs {
			if o.GetName() == name {
				kinds[o.GetKind()] = o
			}
		}
		g.Expect(kinds).To(HaveKey("Job"))
		for _, kind := range []string{"Job", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
			g.Expect(kinds).To(HaveKey(kind), "%s: no %s", c, kind)
			g.Expect(hook(kinds[kind])).To(BeTrue(), "%s %s is no PostDelete hook", c, kind)
			g.Expect(kinds[kind].GetAnnotations()).NotTo(HaveKey("helm.sh/hook"))
		}
		j := uninstallJobsAny(t, objs)[name]
		g.Expect(j.Spec.Template.Spec.ServiceAccountName).To(Equal(name))
		var role rbacv1.ClusterRole
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(kinds["ClusterRole"].Object, &role)).To(Succeed())
		g.Expect(role.Rules).To(HaveLen(1))
		g.Expect(role.Rules[0].Verbs).To(ConsistOf("get", "list", "patch"))
	}
	// Without the value, nothing is an Argo CD hook.
	for _, o := range mustRender(t, nil) {
		g.Expect(hook(o)).To(BeFalse(), "%s %s", o.GetKind(), o.GetName())
	}
}

// uninstallJobsAny maps every Job by name.
func uninstallJobsAny(t *testing.T, objs []*unstructured.Unstructured) map[string]*batchv1.Job {
	t.Helper()
	out := map[string]*batchv1.Job{}
	for _, j := range ofKind[batchv1.Job](t, objs, "Job") {
		out[j.Name] = j
	}
	return out
}
