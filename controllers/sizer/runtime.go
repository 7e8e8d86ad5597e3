package sizer

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	sizerv1alpha1 "github.com/keelson-dev/keelson/apis/sizer/v1alpha1"
)

// Environment variables the sizer manages. A process in a container sees the host's CPUs and memory unless told;
// these tell each runtime the container's limits.
const (
	envGoMaxProcs     = "GOMAXPROCS"
	envGoMemLimit     = "GOMEMLIMIT"
	envJavaToolOpts   = "JAVA_TOOL_OPTIONS"
	envJDKJavaOpts    = "JDK_JAVA_OPTIONS"
	envNodeOptions    = "NODE_OPTIONS"
	envPythonCPUCount = "PYTHON_CPU_COUNT"
	// The thread pools of the numeric libraries Python inference runs on (OpenMP, Intel MKL, OpenBLAS; PyTorch and
	// NumPy start theirs from these), which PYTHON_CPU_COUNT does not reach: unset, each starts one thread per host
	// CPU, and a container limited to 2 CPUs runs dozens of threads throttled by its CPU quota.
	envOMPThreads      = "OMP_NUM_THREADS"
	envMKLThreads      = "MKL_NUM_THREADS"
	envOpenBLASThreads = "OPENBLAS_NUM_THREADS"
)

// heapShare is the part of the usable memory a garbage-collected runtime with a separate heap (the JVM, V8) may
// give its heap: the rest is for metaspace, thread stacks, code caches and native buffers (the JVM), the young
// generation, code and buffers (V8). That rest does not shrink with the container: the JVM's metaspace, code cache
// and thread stacks alone take well over 100 MiB for a Spring application, so at least nonHeapJava is left out of
// the heap (nonHeapNode for V8: its young generation is 3 × 16 MiB semi-spaces on 64-bit, plus code and buffers).
// A heap never gets less than a quarter of the usable memory.
const (
	heapShare   = 0.75
	nonHeapJava = 192 << 20
	nonHeapNode = 128 << 20
)

// heapBytes is the heap a runtime that leaves at least nonHeap bytes outside its heap may have of usable bytes.
func heapBytes(usable, nonHeap float64) float64 {
	return max(usable-max(usable*(1-heapShare), nonHeap), usable/4)
}

// cpuCount is the CPU limit rounded up to whole CPUs (at least 1), or 0 without a limit.
func cpuCount(limits corev1.ResourceList) int64 {
	q, ok := limits[corev1.ResourceCPU]
	if !ok || q.IsZero() {
		return 0
	}
	return max(1, int64(math.Ceil(float64(q.MilliValue())/1000)))
}

// goMaxProcs is what Go (1.25 and later) chooses itself from a CPU limit: rounded up, and never below 2, so the
// garbage collector keeps a worker beside the program. Older Go versions get the same value from the variable.
func goMaxProcs(cpus int64) int64 { return max(2, cpus) }

// runtimeVariables are the variables the sizer may write for the given languages.
func runtimeVariables(rt *sizerv1alpha1.RuntimeSpec) []string {
	if rt == nil {
		return nil
	}
	var out []string
	for _, lang := range rt.Languages {
		switch lang {
		case sizerv1alpha1.LanguageGo:
			out = append(out, envGoMaxProcs, envGoMemLimit)
		case sizerv1alpha1.LanguageJava:
			out = append(out, envJavaToolOpts, envJDKJavaOpts)
		case sizerv1alpha1.LanguageNode:
			out = append(out, envNodeOptions)
		case sizerv1alpha1.LanguagePython:
			out = append(out, envPythonCPUCount, envOMPThreads, envMKLThreads, envOpenBLASThreads)
		}
	}
	return out
}

// derivedVariables are every variable the sizer may derive from a limit, whatever the languages.
var derivedVariables = func() map[string]bool {
	all := &sizerv1alpha1.RuntimeSpec{Languages: []sizerv1alpha1.Language{sizerv1alpha1.LanguageGo,
		sizerv1alpha1.LanguageJava, sizerv1alpha1.LanguageNode, sizerv1alpha1.LanguagePython}}
	out := map[string]bool{}
	for _, name := range runtimeVariables(all) {
		out[name] = true
	}
	return out
}()

// derivedEnv is the part of set that is derived runtime variables. The sizer never hands those over when it stops
// writing them: a value derived from a limit is true only while it follows the limit, so it leaves with the
// derivation (the apply that leaves it out removes it) rather than stay as a number no one keeps true.
func derivedEnv(set fieldSet) fieldSet {
	var out fieldSet
	for c, names := range set.env {
		for n := range names {
			if derivedVariables[n] {
				out.addEnv(c, n)
			}
		}
	}
	return out
}

// ourFlags are the option prefixes the sizer writes into options variables.
var ourFlags = []string{"-XX:ActiveProcessorCount=", "-XX:MaxRAMPercentage=", "--max-old-space-size="}

// withoutOurFlags removes the sizer's own flags from an options value, leaving the user's.
func withoutOurFlags(value string) string {
	var keep []string
	for _, tok := range strings.Fields(value) {
		ours := false
		for _, f := range ourFlags {
			ours = ours || strings.HasPrefix(tok, f)
		}
		if !ours {
			keep = append(keep, tok)
		}
	}
	return strings.Join(keep, " ")
}

// runtimeEnv computes the environment variables that tune the given languages to limits. current is the
// container's environment and owned names the variables the sizer itself wrote before (from its managed fields).
// A variable someone else set is never replaced; an options variable (JAVA_TOOL_OPTIONS, NODE_OPTIONS) keeps its
// other options and gets only the flags it does not set itself. The result is sorted by name.
func runtimeEnv(rt *sizerv1alpha1.RuntimeSpec, limits corev1.ResourceList, current []corev1.EnvVar, owned map[string]bool) []corev1.EnvVar {
	if rt == nil {
		return nil
	}
	theirs := map[string]corev1.EnvVar{} // set by someone else
	kept := map[string]string{}          // other options in a variable of the sizer's own, which it keeps
	for _, e := range current {
		if owned[e.Name] {
			kept[e.Name] = withoutOurFlags(e.Value)
		} else {
			theirs[e.Name] = e
		}
	}
	headroom := float64(ptr.Deref(rt.MemoryHeadroomPercent, sizerv1alpha1.DefaultMemoryHeadroomPercent))
	cpus := cpuCount(limits)
	// A negative limit (refused in a pod; a sizer admitted while its webhook was down can ask for one) sets no
	// memory target: Quantity.Value wraps large negative binary quantities round to positive numbers.
	memQ := quantityOrZero(limits, corev1.ResourceMemory)
	mem := int64(0)
	if memQ.Sign() > 0 {
		mem = memQ.Value()
	}
	usable := float64(mem) * (100 - headroom) / 100

	var out []corev1.EnvVar
	set := func(name, value string) {
		if _, taken := theirs[name]; taken || value == "" {
			return // never overwrite what someone else set
		}
		out = append(out, corev1.EnvVar{Name: name, Value: value})
	}
	// appendFlags writes the flags the user did not set into an options variable of the sizer's own. A variable
	// someone else set is theirs: writing it would be a conflict with its owner (a GitOps tool applying it back).
	// The flags then go into the first of the alternatives that is free (the JVM reads JDK_JAVA_OPTIONS as well),
	// or nowhere, leaving the user's settings to rule.
	appendFlags := func(names []string, flags ...string) {
		userSet := ""
		for _, n := range names {
			userSet += " " + theirs[n].Value + " " + kept[n]
		}
		var add []string
		for _, f := range flags {
			key, _, _ := strings.Cut(f, "=")
			if !strings.Contains(userSet, key+"=") {
				add = append(add, f) // the user did not set this flag
			}
		}
		if len(add) == 0 {
			return
		}
		for _, name := range names {
			if _, taken := theirs[name]; !taken {
				out = append(out, corev1.EnvVar{Name: name, Value: strings.TrimSpace(kept[name] + " " + strings.Join(add, " "))})
				return
			}
		}
	}

	for _, lang := range rt.Languages {
		switch lang {
		case sizerv1alpha1.LanguageGo:
			if cpus > 0 {
				set(envGoMaxProcs, fmt.Sprint(goMaxProcs(cpus)))
			}
			if mib := int64(usable) / (1 << 20); mib > 0 {
				set(envGoMemLimit, fmt.Sprintf("%dMiB", mib)) // below 1MiB: no limit rather than a zero one
			}
		case sizerv1alpha1.LanguageJava:
			var flags []string
			if cpus > 0 {
				flags = append(flags, fmt.Sprintf("-XX:ActiveProcessorCount=%d", cpus))
			}
			if mem > 0 {
				// A percentage of the container's memory, rounded down to the JVM's tenth.
				pct := math.Floor(heapBytes(usable, nonHeapJava)/float64(mem)*1000) / 10
				flags = append(flags, fmt.Sprintf("-XX:MaxRAMPercentage=%.1f", pct))
			}
			appendFlags([]string{envJavaToolOpts, envJDKJavaOpts}, flags...)
		case sizerv1alpha1.LanguageNode:
			if mib := int64(heapBytes(usable, nonHeapNode)) / (1 << 20); mib > 0 {
				appendFlags([]string{envNodeOptions}, fmt.Sprintf("--max-old-space-size=%d", mib))
			}
		case sizerv1alpha1.LanguagePython:
			if cpus > 0 {
				for _, name := range []string{envPythonCPUCount, envOMPThreads, envMKLThreads, envOpenBLASThreads} {
					set(name, fmt.Sprint(cpus))
				}
			}
		}
	}
	return sortEnv(out)
}

func sortEnv(env []corev1.EnvVar) []corev1.EnvVar {
	for i := 1; i < len(env); i++ {
		for j := i; j > 0 && env[j].Name < env[j-1].Name; j-- {
			env[j], env[j-1] = env[j-1], env[j]
		}
	}
	return env
}

func (r *Reconciler) unownedEnvOf(key string, generation int64) (fieldSet, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.unownedEnv[key]
	return c.unowned, ok && c.generation == generation
}

func (r *Reconciler) forgetUnownedEnv(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.unownedEnv, key)
}

func (r *Reconciler) rememberUnownedEnv(key string, generation int64, unowned fieldSet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unownedEnv == nil {
		r.unownedEnv = map[string]envCheck{}
	}
	r.unownedEnv[key] = envCheck{generation: generation, unowned: unowned}
}
