package sizer

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
	"github.com/keelson-dev/keelson/internal/fuzzinput"
)

// fuzzResourceList is up to three quantities of CPU, memory, a GPU or ephemeral storage.
func fuzzResourceList(in *fuzzinput.Source) corev1.ResourceList {
	n := in.Intn(4)
	if n == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for range n {
		out[corev1.ResourceName(in.Pick("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage"))] = in.Quantity()
	}
	return out
}

// FuzzDesiredResources bounds any requests and limits by any minAllowed and maxAllowed, for any containers, and
// checks that what the sizer writes stays within the bounds: never above maxAllowed, never below minAllowed where
// minAllowed does not exceed maxAllowed (the webhook refuses that; CEL cannot compare quantities), except a request
// lowered to a limit the sizer does not write; never a request above its limit; limits only with RequestsAndLimits;
// and the inputs untouched.
func FuzzDesiredResources(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x00\x01\x00\x04\x01\x00\x01\x01\x00\x02\x01\x00\x03\x01\x00\x01\x01\x00\x00"))
	f.Add([]byte("\x03\x02\x02\x01\x05\x00\x07\x01\x01\x01\x05\x01\x01\x02\x0b\x01\x01\x03\x01\x00\x01\x02\x02\x01\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		policies, containers := fuzzSizing(fuzzinput.New(data))
		policiesBefore := slices.Clone(policies)
		for i := range policiesBefore {
			policiesBefore[i] = *policies[i].DeepCopy()
		}
		containersBefore := make([]corev1.Container, len(containers))
		for i := range containers {
			containersBefore[i] = *containers[i].DeepCopy()
		}

		applied := desiredResources(policies, containers)

		if !apiequality.Semantic.DeepEqual(policies, policiesBefore) || !apiequality.Semantic.DeepEqual(containers, containersBefore) {
			t.Fatal("desiredResources changed its inputs")
		}
		if !slices.IsSortedFunc(applied, func(a, b sizerv1alpha1.AppliedResources) int {
			return cmpString(a.ContainerName, b.ContainerName)
		}) {
			t.Fatalf("not sorted by container: %v", applied)
		}
		for i, a := range applied {
			if i > 0 && applied[i-1].ContainerName == a.ContainerName {
				t.Fatalf("container %s sized twice", a.ContainerName)
			}
			ci := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == a.ContainerName })
			p := policyFor(policies, a.ContainerName)
			if ci < 0 || p == nil {
				t.Fatalf("sizes %s, which is no container with a policy", a.ContainerName)
			}
			c := containers[ci]
			if p.ControlledValues == sizerv1alpha1.RequestsOnly && a.Limits != nil {
				t.Fatalf("%s: writes limits %v with RequestsOnly", a.ContainerName, a.Limits)
			}
			checkBounds(t, a, p, c)
			limits := effectiveLimits(c, applied)
			for name, req := range a.Requests {
				if lim, ok := limits[name]; ok && req.Cmp(lim) > 0 {
					t.Fatalf("%s: request of %s %s is above its limit %s", a.ContainerName, name, req.String(), lim.String())
				}
			}
		}
	})
}

// fuzzSizing is up to four resources entries, for containers of the workload or not, and some of the workload's
// containers, each with any requests, limits and bounds.
func fuzzSizing(in *fuzzinput.Source) ([]sizerv1alpha1.ContainerResources, []corev1.Container) {
	var policies []sizerv1alpha1.ContainerResources
	for range in.Intn(4) {
		policies = append(policies, sizerv1alpha1.ContainerResources{
			ContainerName: in.Pick("app", "sidecar", AllContainers, "ghost"),
			Requests:      fuzzResourceList(in), Limits: fuzzResourceList(in),
			MinAllowed: fuzzResourceList(in), MaxAllowed: fuzzResourceList(in),
			ControlledValues: sizerv1alpha1.ControlledValues(in.Pick(string(sizerv1alpha1.RequestsAndLimits),
				string(sizerv1alpha1.RequestsOnly), "")),
		})
	}
	var containers []corev1.Container
	for _, name := range []string{"app", "sidecar", "other"} {
		if in.Bool() {
			containers = append(containers, corev1.Container{Name: name, Resources: corev1.ResourceRequirements{
				Requests: fuzzResourceList(in), Limits: fuzzResourceList(in)}})
		}
	}
	return policies, containers
}

// checkBounds checks what the sizer writes for container c under entry p: only what the entry names, never above
// maxAllowed, never below minAllowed where minAllowed does not exceed maxAllowed, except a request lowered to a
// limit the sizer leaves to the container.
func checkBounds(t *testing.T, a sizerv1alpha1.AppliedResources, p *sizerv1alpha1.ContainerResources, c corev1.Container) {
	t.Helper()
	for what, list := range map[string]corev1.ResourceList{"request": a.Requests, "limit": a.Limits} {
		source := p.Requests
		if what == "limit" {
			source = p.Limits
		}
		for name, v := range list {
			if _, ok := source[name]; !ok {
				t.Fatalf("%s: writes a %s of %s that the policy does not name", a.ContainerName, what, name)
			}
			hi, hasHi := p.MaxAllowed[name]
			if hasHi && v.Cmp(hi) > 0 {
				t.Fatalf("%s: %s of %s is %s, above maxAllowed %s", a.ContainerName, what, name, v.String(), hi.String())
			}
			lo, hasLo := p.MinAllowed[name]
			if !hasLo || v.Cmp(lo) >= 0 || (hasHi && lo.Cmp(hi) > 0) {
				continue
			}
			// Below the floor: only a request lowered to a limit the sizer leaves to the container.
			own, ownLimit := a.Limits[name]
			theirs, theirLimit := c.Resources.Limits[name]
			if what == "limit" || ownLimit || !theirLimit || v.Cmp(theirs) != 0 {
				t.Fatalf("%s: %s of %s is %s, below minAllowed %s (own limit %v %s)", a.ContainerName, what, name,
					v.String(), lo.String(), ownLimit, own.String())
			}
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var (
	mibValue    = regexp.MustCompile(`^([1-9][0-9]*)MiB$`)
	maxOldSpace = regexp.MustCompile(`--max-old-space-size=([0-9]+)`)
	maxRAM      = regexp.MustCompile(`-XX:MaxRAMPercentage=([0-9.]+)`)
	cpuFlag     = regexp.MustCompile(`-XX:ActiveProcessorCount=([0-9]+)`)
)

// FuzzRuntimeEnv computes the runtime variables for any languages, headroom, limits and environment, and checks
// that the sizer never writes a variable someone else set, writes each of its own once, sorted, with values that
// hold the limits (a memory target within the memory limit, CPU counts of at least one), and that a container
// already carrying the result gets the same result again: no write in the steady state.
func FuzzRuntimeEnv(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x01\x01\x01\x0a\x00\x01\x05\x01\x03\x02\x01\x00\x00\x01\x02\x01\x01"))
	f.Add([]byte("\x01\x01\x00\x01\x00\x05\x00\x02\x06\x01\x07\x03\x00\x01\x01\x02\x00\x00\x02\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzinput.New(data)
		var rt *sizerv1alpha1.RuntimeSpec
		if in.Intn(8) != 0 {
			rt = &sizerv1alpha1.RuntimeSpec{MemoryHeadroomPercent: ptr.To(int32(in.Intn(91)))}
			for _, lang := range []sizerv1alpha1.Language{sizerv1alpha1.LanguageGo, sizerv1alpha1.LanguageJava,
				sizerv1alpha1.LanguageNode, sizerv1alpha1.LanguagePython} {
				if in.Bool() {
					rt.Languages = append(rt.Languages, lang)
				}
			}
		}
		limits := corev1.ResourceList{}
		if in.Intn(4) != 0 {
			limits[corev1.ResourceCPU] = in.Quantity()
		}
		if in.Intn(4) != 0 {
			limits[corev1.ResourceMemory] = in.Quantity()
		}
		names := []string{envGoMaxProcs, envGoMemLimit, envJavaToolOpts, envJDKJavaOpts, envNodeOptions, envPythonCPUCount, "OTHER"}
		var current []corev1.EnvVar
		owned := map[string]bool{}
		for _, name := range names {
			if in.Intn(3) != 0 {
				continue
			}
			current = append(current, corev1.EnvVar{Name: name, Value: in.Word("-Xss1m", "-XX:MaxRAMPercentage=50",
				"--max-old-space-size=100 --enable-source-maps", "-XX:ActiveProcessorCount=2  -Dx=y", "4", "")})
			owned[name] = in.Bool()
		}

		out := runtimeEnv(rt, limits, current, owned)

		allowed := runtimeVariables(rt)
		theirs := map[string]bool{}
		for _, e := range current {
			theirs[e.Name] = !owned[e.Name]
		}
		for i, e := range out {
			switch {
			case i > 0 && out[i-1].Name >= e.Name:
				t.Fatalf("not sorted, or %s written twice: %v", e.Name, out)
			case !slices.Contains(allowed, e.Name):
				t.Fatalf("writes %s, which none of %v asks for", e.Name, rt.Languages)
			case theirs[e.Name]:
				t.Fatalf("writes %s, which someone else set", e.Name)
			case e.Value == "":
				t.Fatalf("writes %s empty", e.Name)
			}
		}
		checkRuntimeValues(t, out, limits)

		// The steady state: the container now holds the result, the sizer owns what it wrote.
		var next []corev1.EnvVar
		nextOwned := map[string]bool{}
		for _, e := range current {
			if theirs[e.Name] {
				next = append(next, e)
			}
		}
		for _, e := range out {
			next = append(next, e)
			nextOwned[e.Name] = true
		}
		if again := runtimeEnv(rt, limits, next, nextOwned); !apiequality.Semantic.DeepEqual(again, out) {
			t.Fatalf("not steady: first %v, then %v", out, again)
		}
	})
}

// checkRuntimeValues checks that each written value is what its runtime reads and within the limits.
func checkRuntimeValues(t *testing.T, out []corev1.EnvVar, limits corev1.ResourceList) {
	t.Helper()
	mem := quantityOrZero(limits, corev1.ResourceMemory)
	withinMemory := func(name string, mib int64) {
		if mib <= 0 || resource.NewQuantity(mib<<20, resource.BinarySI).Cmp(mem) > 0 {
			t.Fatalf("%s: %d MiB is not within the memory limit %s", name, mib, mem.String())
		}
	}
	cpus := func(name, value string, least int64) {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < least {
			t.Fatalf("%s=%q: want a whole number of at least %d", name, value, least)
		}
	}
	for _, e := range out {
		switch e.Name {
		case envGoMaxProcs:
			cpus(e.Name, e.Value, 2)
		case envPythonCPUCount, envOMPThreads, envMKLThreads, envOpenBLASThreads:
			cpus(e.Name, e.Value, 1)
		case envGoMemLimit:
			m := mibValue.FindStringSubmatch(e.Value)
			if m == nil {
				t.Fatalf("%s=%q: want <n>MiB", e.Name, e.Value)
			}
			n, _ := strconv.ParseInt(m[1], 10, 64)
			withinMemory(e.Name, n)
		case envNodeOptions, envJavaToolOpts, envJDKJavaOpts:
			if m := maxOldSpace.FindStringSubmatch(e.Value); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				withinMemory(e.Name, n)
			}
			if m := maxRAM.FindStringSubmatch(e.Value); m != nil {
				if p, err := strconv.ParseFloat(m[1], 64); err != nil || p <= 0 || p > 100*heapShare {
					t.Fatalf("%s=%q: MaxRAMPercentage out of (0, %v]", e.Name, e.Value, 100*heapShare)
				}
			}
			if m := cpuFlag.FindStringSubmatch(e.Value); m != nil {
				cpus(e.Name, m[1], 1)
			}
		default:
			t.Fatalf("unexpected variable %s", fmt.Sprint(e))
		}
	}
}
