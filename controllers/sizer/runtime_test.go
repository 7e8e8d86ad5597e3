package sizer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

func limits(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func env(kv ...string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for i := 0; i < len(kv); i += 2 {
		out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func TestRuntimeEnv(t *testing.T) {
	rt := func(headroom int32, langs ...sizerv1alpha1.Language) *sizerv1alpha1.RuntimeSpec {
		return &sizerv1alpha1.RuntimeSpec{Languages: langs, MemoryHeadroomPercent: ptr.To(headroom)}
	}
	for name, tc := range map[string]struct {
		rt      *sizerv1alpha1.RuntimeSpec
		limits  corev1.ResourceList
		current []corev1.EnvVar
		owned   map[string]bool
		want    []corev1.EnvVar
	}{
		"no runtime":               {rt: nil, limits: limits("2", "1Gi")},
		"go":                       {rt: rt(10, "go"), limits: limits("1500m", "1Gi"), want: env("GOMAXPROCS", "2", "GOMEMLIMIT", "921MiB")},
		"go, headroom 25":          {rt: rt(25, "go"), limits: limits("250m", "2Gi"), want: env("GOMAXPROCS", "2", "GOMEMLIMIT", "1536MiB")},
		"go never below two procs": {rt: rt(10, "go"), limits: limits("500m", ""), want: env("GOMAXPROCS", "2")},
		"go, more than two":        {rt: rt(10, "go"), limits: limits("2500m", ""), want: env("GOMAXPROCS", "3")},
		"go, no zero memory limit": {rt: rt(90, "go"), limits: limits("", "1Mi")},
		"go, no limits":            {rt: rt(10, "go"), limits: limits("", "")},
		"java": {rt: rt(10, "java"), limits: limits("4", "2Gi"),
			want: env("JAVA_TOOL_OPTIONS", "-XX:ActiveProcessorCount=4 -XX:MaxRAMPercentage=67.5")},
		"java leaves the user's options and uses the other variable": {rt: rt(10, "java"), limits: limits("4", "2Gi"),
			current: env("JAVA_TOOL_OPTIONS", "-Xss1m"),
			want:    env("JDK_JAVA_OPTIONS", "-XX:ActiveProcessorCount=4 -XX:MaxRAMPercentage=67.5")},
		"java keeps a flag the user set": {rt: rt(10, "java"), limits: limits("4", "2Gi"),
			current: env("JAVA_TOOL_OPTIONS", "-XX:MaxRAMPercentage=50"),
			want:    env("JDK_JAVA_OPTIONS", "-XX:ActiveProcessorCount=4")},
		"java: both variables the user's": {rt: rt(10, "java"), limits: limits("4", "2Gi"),
			current: env("JAVA_TOOL_OPTIONS", "-Xss1m", "JDK_JAVA_OPTIONS", "-Dx=y")},
		"java rewrites its own flags when limits change": {rt: rt(10, "java"), limits: limits("8", "2Gi"),
			current: env("JAVA_TOOL_OPTIONS", "-Xss1m -XX:ActiveProcessorCount=4 -XX:MaxRAMPercentage=67.5"),
			owned:   map[string]bool{"JAVA_TOOL_OPTIONS": true},
			want:    env("JAVA_TOOL_OPTIONS", "-Xss1m -XX:ActiveProcessorCount=8 -XX:MaxRAMPercentage=67.5")},
		"node":                           {rt: rt(10, "node"), limits: limits("1", "1Gi"), want: env("NODE_OPTIONS", "--max-old-space-size=691")},
		"node leaves the user's options": {rt: rt(10, "node"), limits: limits("1", "1Gi"), current: env("NODE_OPTIONS", "--enable-source-maps")},
		"python": {rt: rt(10, "python"), limits: limits("3", ""),
			want: env("MKL_NUM_THREADS", "3", "OMP_NUM_THREADS", "3", "OPENBLAS_NUM_THREADS", "3", "PYTHON_CPU_COUNT", "3")},
		"python keeps the user's thread count": {rt: rt(10, "python"), limits: limits("3", ""), current: env("OMP_NUM_THREADS", "1"),
			want: env("MKL_NUM_THREADS", "3", "OPENBLAS_NUM_THREADS", "3", "PYTHON_CPU_COUNT", "3")},
		// 512Mi: 460.8 MiB usable, of which 192 MiB stay out of the heap (67.5% would leave 166 MiB, too little for a
		// Spring application's metaspace, threads and code cache).
		"java in a small container leaves room beside the heap": {rt: rt(10, "java"), limits: limits("1", "512Mi"),
			want: env("JAVA_TOOL_OPTIONS", "-XX:ActiveProcessorCount=1 -XX:MaxRAMPercentage=52.5")},
		"node in a small container leaves room for the young generation": {rt: rt(10, "node"), limits: limits("1", "256Mi"),
			want: env("NODE_OPTIONS", "--max-old-space-size=102")},
		"a value the user set stays": {rt: rt(10, "go"), limits: limits("2", "1Gi"), current: env("GOMAXPROCS", "8"), want: env("GOMEMLIMIT", "921MiB")},
		"its own value is rewritten": {rt: rt(10, "go"), limits: limits("4", "1Gi"), current: env("GOMAXPROCS", "2"),
			owned: map[string]bool{"GOMAXPROCS": true}, want: env("GOMAXPROCS", "4", "GOMEMLIMIT", "921MiB")},
		"go and java": {rt: rt(10, "go", "java"), limits: limits("2", "512Mi"),
			want: env("GOMAXPROCS", "2", "GOMEMLIMIT", "460MiB", "JAVA_TOOL_OPTIONS", "-XX:ActiveProcessorCount=2 -XX:MaxRAMPercentage=52.5")},
		"options from a Secret are left alone": {rt: rt(10, "java"), limits: limits("2", "1Gi"),
			current: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", ValueFrom: &corev1.EnvVarSource{}}},
			want:    env("JDK_JAVA_OPTIONS", "-XX:ActiveProcessorCount=2 -XX:MaxRAMPercentage=67.5")},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, runtimeEnv(tc.rt, tc.limits, tc.current, tc.owned)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDesiredResources(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	containers := []corev1.Container{{Name: "app"}, {Name: "sidecar", Resources: corev1.ResourceRequirements{Limits: rl("cpu", "100m")}}, {Name: "other"},
		{Name: "mixed", Resources: corev1.ResourceRequirements{Requests: rl("memory", "1Gi"), Limits: rl("cpu", "100m")}}}
	for name, tc := range map[string]struct {
		policies []sizerv1alpha1.ContainerResources
		want     []sizerv1alpha1.AppliedResources
	}{
		"one container": {policies: []sizerv1alpha1.ContainerResources{{ContainerName: "app", Requests: rl("cpu", "250m"), Limits: rl("cpu", "1")}},
			want: []sizerv1alpha1.AppliedResources{{ContainerName: "app", Requests: rl("cpu", "250m"), Limits: rl("cpu", "1")}}},
		"bounded by min and max": {policies: []sizerv1alpha1.ContainerResources{{ContainerName: "app",
			Requests: rl("cpu", "10m", "memory", "8Gi"), Limits: rl("memory", "16Gi"), MinAllowed: rl("cpu", "50m"), MaxAllowed: rl("memory", "4Gi")}},
			want: []sizerv1alpha1.AppliedResources{{ContainerName: "app", Requests: rl("cpu", "50m", "memory", "4Gi"), Limits: rl("memory", "4Gi")}}},
		"RequestsOnly leaves limits, and the request stays under the current limit": {policies: []sizerv1alpha1.ContainerResources{{
			ContainerName: "sidecar", Requests: rl("cpu", "200m"), Limits: rl("cpu", "2"), ControlledValues: sizerv1alpha1.RequestsOnly}},
			want: []sizerv1alpha1.AppliedResources{{ContainerName: "sidecar", Requests: rl("cpu", "100m")}}},
		"star covers the others": {policies: []sizerv1alpha1.ContainerResources{
			{ContainerName: "*", Requests: rl("memory", "64Mi")}, {ContainerName: "app", Requests: rl("memory", "1Gi")}},
			want: []sizerv1alpha1.AppliedResources{{ContainerName: "app", Requests: rl("memory", "1Gi")},
				{ContainerName: "mixed", Requests: rl("memory", "64Mi")}, {ContainerName: "other", Requests: rl("memory", "64Mi")}, {ContainerName: "sidecar", Requests: rl("memory", "64Mi")}}},
		"a limit of the entry's own over a workload's limit of another resource": {policies: []sizerv1alpha1.ContainerResources{{
			ContainerName: "mixed", Requests: rl("cpu", "200m"), Limits: rl("memory", "2Gi")}},
			want: []sizerv1alpha1.AppliedResources{{ContainerName: "mixed", Requests: rl("cpu", "100m"), Limits: rl("memory", "2Gi")}}},
		"a request the entry does not name is not written": {policies: []sizerv1alpha1.ContainerResources{{
			ContainerName: "mixed", Limits: rl("memory", "512Mi")}},
			want: []sizerv1alpha1.AppliedResources{{ContainerName: "mixed", Limits: rl("memory", "512Mi")}}},
		"unknown container is ignored": {policies: []sizerv1alpha1.ContainerResources{{ContainerName: "ghost", Requests: rl("cpu", "1")}}},
	} {
		t.Run(name, func(t *testing.T) {
			got := desiredResources(tc.policies, containers)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The limits a container runs with are the sizer's over its own, key by key: an entry limiting cpu keeps the
// workload's memory limit, and GOMEMLIMIT follows that memory limit.
func TestEffectiveLimitsMergeByKey(t *testing.T) {
	c := corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceCPU: resource.MustParse("1")}}}
	got := effectiveLimits(c, []sizerv1alpha1.AppliedResources{{ContainerName: "app",
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}})
	if got.Memory().String() != "1Gi" || got.Cpu().String() != "2" {
		t.Errorf("effective limits %v, want memory 1Gi and cpu 2", got)
	}
	if c.Resources.Limits.Cpu().String() != "1" {
		t.Error("effectiveLimits changed the container")
	}
	if got := effectiveLimits(c, nil); got.Memory().String() != "1Gi" {
		t.Errorf("without an entry: %v", got)
	}
}
