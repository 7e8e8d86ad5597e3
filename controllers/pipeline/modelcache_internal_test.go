package pipeline

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	inferencev1alpha1 "github.com/keelson-dev/keelson/apis/inference/v1alpha1"
	"github.com/keelson-dev/keelson/internal/modelfetch"
)

// qosClass is a pod's QoS class as the kubelet computes it, over every container (init and sidecar ones too), for
// cpu and memory: BestEffort when none asks for either, Guaranteed when every container limits both at its
// requests (a request defaults to its limit), else Burstable.
func qosClass(containers ...corev1.ResourceRequirements) corev1.PodQOSClass {
	any, all := false, true
	for _, r := range containers {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, requested := r.Requests[name]
			lim, limited := r.Limits[name]
			any = any || requested || limited
			if !limited || (requested && req.Cmp(lim) != 0) {
				all = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case all:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// The fetch and the hold keep the pod's QoS class the server's, and a ResourceQuota on limits finds the hold's set
// whenever the server asks for any cpu or memory.
func TestHoldResourcesKeepTheQoSClass(t *testing.T) {
	q := resource.MustParse
	for name, server := range map[string]corev1.ResourceRequirements{
		"best effort":                 {},
		"best effort with a GPU only": {Limits: corev1.ResourceList{"nvidia.com/gpu": q("1")}},
		"guaranteed by limits":        {Limits: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")}},
		"guaranteed with a GPU": {
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi"), "nvidia.com/gpu": q("1")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi"), "nvidia.com/gpu": q("1")}},
		"burstable, a request":   {Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")}},
		"burstable, limits only": {Limits: corev1.ResourceList{corev1.ResourceCPU: q("2")}},
		"burstable, limits above": {
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")}},
	} {
		hold := holdResources(server, ModelFetch{})
		want := qosClass(server)
		if got := qosClass(server, cpuAndMemory(server), hold); got != want {
			t.Errorf("%s: the pod is %s with the fetch and the hold, %s without", name, got, want)
		}
		if want != corev1.PodQOSBestEffort && (hold.Limits.Cpu().String() != DefaultHoldCPU || hold.Limits.Memory().String() != DefaultHoldMemory) {
			t.Errorf("%s: the hold's limits are not the default size: a quota on limits refuses the pod (%+v)", name, hold)
		}
		// An operator's size (a LimitRange asks every container for more) keeps the class too.
		sized := holdResources(server, ModelFetch{HoldCPU: q("100m"), HoldMemory: q("128Mi")})
		if got := qosClass(server, cpuAndMemory(server), sized); got != want {
			t.Errorf("%s: the pod is %s with a sized hold, %s without", name, got, want)
		}
		if want != corev1.PodQOSBestEffort && (sized.Requests.Cpu().String() != "100m" || sized.Limits.Memory().String() != "128Mi") {
			t.Errorf("%s: the operator's hold size is not the hold's: %+v", name, sized)
		}
	}
}

// testCA is a self-signed certificate (openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -subj /CN=test-root).
const testCA = `-----BEGIN CERTIFICATE-----
MIIBfDCCASOgAwIBAgIUU07DcMc26f5CYnzALOf3LN0jYPwwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJdGVzdC1yb290MB4XDTI2MTEyMzExMjIxOFoXDTM2MTEyMDEx
MjIxOFowFDESMBAGA1UEAwwJdGVzdC1yb290MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEjZ8UtQ233o+H8qSFakgzPxw6r64nUg4D6np6/gq3d9dyqOKraAvjuvkM
C7QSvORE0POvSqr6c5pvdmBVSmUiSqNTMFEwHQYDVR0OBBYEFNReSgBI1DhBNQ4+
hQdis8jYHa6HMB8GA1UdIwQYMBaAFNReSgBI1DhBNQ4+hQdis8jYHa6HMA8GA1Ud
EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgdfsVgk9QiG7msHis+FNy3Fw8
3m09YQQ3XJugufz8bU0CIEZNqYqPkOFoTbW7A5RdGlKlHALvBucwa3c8XjvnJGSz
-----END CERTIFICATE-----
`

// A private CA's bundle reaches the fetch as a file of the named ConfigMap key only (the key defaults to ca.crt),
// and the operators' proxy as HTTP_PROXY, HTTPS_PROXY and NO_PROXY; the server gets neither, the hold no proxy.
func TestFetchTrustsTheCABundleAndUsesTheProxy(t *testing.T) {
	f, err := ModelFetchFromEnv(func(k string) string {
		return map[string]string{EnvFetchImage: "img", EnvFetchHTTPSProxy: "http://proxy.corp:3128",
			EnvFetchNoProxy: ".svc,.cluster.local", EnvFetchCABundle: testCA}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy.corp:3128"}, {Name: "NO_PROXY", Value: ".svc,.cluster.local"},
		{Name: modelfetch.EnvCABundle, Value: testCA}}
	for _, key := range []string{"", "root-certs.pem"} {
		p := &inferencev1alpha1.Pipeline{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec: inferencev1alpha1.PipelineSpec{ModelStorage: inferencev1alpha1.ModelStorage{Type: inferencev1alpha1.StorageCache,
				Cache: &inferencev1alpha1.ModelCache{CABundle: &inferencev1alpha1.ConfigMapKey{Name: "trust", Key: key}}}}}
		s := inferencev1alpha1.Step{Name: "a", Image: "server", Model: "https://models.corp/m.onnx", Location: "node-1"}
		pod := corev1.PodSpec{Containers: []corev1.Container{{Name: "server"}}}
		withModelCache(&pod, p, s, f)

		fetch := pod.InitContainers[0]
		if !slices.Equal(fetch.Env, wantEnv) {
			t.Errorf("key %q: the fetch's env = %v, want %v", key, fetch.Env, wantEnv)
		}
		if i := slices.Index(fetch.Args, "--ca-file"); i < 0 || fetch.Args[i+1] != caBundlePath+"/ca.crt" {
			t.Errorf("key %q: the fetch's args %v name no --ca-file %s/ca.crt", key, fetch.Args, caBundlePath)
		}
		if !slices.ContainsFunc(fetch.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == caBundleVolume && m.MountPath == caBundlePath && m.ReadOnly
		}) {
			t.Errorf("key %q: the fetch does not mount the bundle read-only: %v", key, fetch.VolumeMounts)
		}
		want := key
		if want == "" {
			want = "ca.crt"
		}
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == caBundleVolume })
		if i < 0 || pod.Volumes[i].ConfigMap == nil || pod.Volumes[i].ConfigMap.Name != "trust" ||
			!reflect.DeepEqual(pod.Volumes[i].ConfigMap.Items, []corev1.KeyToPath{{Key: want, Path: "ca.crt"}}) {
			t.Errorf("key %q: the bundle's volume = %+v, want the ConfigMap trust's key %s as ca.crt", key, pod.Volumes, want)
		}
		if hold := pod.InitContainers[1]; hold.Name != HoldContainer || len(hold.Env) > 0 {
			t.Errorf("key %q: the hold (%s) gets the fetch's proxy: %v", key, hold.Name, hold.Env)
		}
		for _, c := range append(pod.InitContainers[1:], pod.Containers...) {
			if slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == caBundleVolume }) {
				t.Errorf("key %q: %s mounts the fetch's bundle", key, c.Name)
			}
		}
	}
}
