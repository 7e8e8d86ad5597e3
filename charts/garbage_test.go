package charts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// garbage is a value a user may give the chart by mistake, and the line of Helm's answer that says what is wrong:
// the schema's (values.schema.json), or the chart's own refusal (templates/validate.yaml) where no schema can say it.
type garbage struct {
	what string
	vals map[string]any
	want string
}

// nested builds {k1: {k2: … {kn: v}}} from "k1.k2…kn".
func nested(path string, v any) map[string]any {
	keys := strings.Split(path, ".")
	out := map[string]any{keys[len(keys)-1]: v}
	for i := len(keys) - 2; i >= 0; i-- {
		out = map[string]any{keys[i]: out}
	}
	return out
}

var garbageValues = []garbage{
	// Unknown keys, at the top and nested: a typo fails naming it instead of doing nothing.
	{"unknown top-level key", nested("replicas", 3), "at '': additional properties 'replicas' not allowed"},
	{"misspelt controller block", nested("pipelinecontroller.enabled", false), "at '': additional properties 'pipelinecontroller' not allowed"},
	{"misspelt controller key", nested("daemonsetController.replica", 3), "at '/daemonsetController': additional properties 'replica' not allowed"},
	{"misspelt budget key", nested("workloadSizer.pdb.maxUnavaliable", 1), "at '/workloadSizer/pdb': additional properties 'maxUnavaliable' not allowed"},
	{"misspelt certificate mode key", nested("webhooks.certs.mod", "certManager"), "at '/webhooks/certs': additional properties 'mod' not allowed"},
	{"misspelt image key", nested("global.image.tags", "v1"), "at '/global/image': additional properties 'tags' not allowed"},
	{"misspelt port name", nested("global.ports.webhok", 9443), "at '/global/ports': additional properties 'webhok' not allowed"},
	{"misspelt CRD key", nested("crds.instal", false), "at '/crds': additional properties 'instal' not allowed"},
	{"misspelt leader election key", nested("global.leaderElection.leaseDuraton", "15s"), "at '/global/leaderElection': additional properties 'leaseDuraton' not allowed"},

	// Wrong types.
	{"replicas a word", nested("daemonsetController.replicas", "two"), "at '/daemonsetController/replicas': got string, want integer"},
	{"enabled a word", nested("daemonsetController.enabled", "yes"), "at '/daemonsetController/enabled': got string, want boolean"},
	{"concurrency a fraction", nested("workloadSizer.concurrency", 1.5), "at '/workloadSizer/concurrency': got number, want integer"},
	{"hostNetwork a string", nested("global.hostNetwork", "true"), "at '/global/hostNetwork': got string, want boolean"},
	{"extraArgs a string", nested("global.extraArgs", "--zap-devel=true"), "at '/global/extraArgs': got string, want array"},
	{"extraEnv a list of strings", nested("global.extraEnv", []any{"A=1"}), "at '/global/extraEnv/0': got string, want object"},
	{"nodeSelector a list", nested("global.nodeSelector", []any{"linux"}), "at '/global/nodeSelector': got array, want object"},
	{"tolerations a map", nested("global.tolerations", map[string]any{"key": "x"}), "at '/global/tolerations': got object, want array"},
	{"resources a word", nested("global.resources", "small"), "at '/global/resources': got string, want object"},
	{"timeoutSeconds with a unit", nested("webhooks.timeoutSeconds", "10s"), "at '/webhooks/timeoutSeconds': got string, want integer"},
	{"qps a word", nested("global.kubeAPI.qps", "fast"), "at '/global/kubeAPI/qps': got string, want number"},
	{"a label value a number", nested("commonLabels.team", 5), "at '/commonLabels/team': got number, want string"},
	{"global a string", map[string]any{"global": "on"}, "at '/global': got string, want object"},

	// Values out of range or not among the choices.
	{"negative replicas", nested("daemonsetController.replicas", -1), "at '/daemonsetController/replicas': minimum: got -1, want 1"},
	{"zero concurrency", nested("workloadSizer.concurrency", 0), "at '/workloadSizer/concurrency': minimum: got 0, want 1"},
	{"negative burst", nested("global.kubeAPI.burst", -5), "at '/global/kubeAPI/burst': minimum: got -5, want 1"},
	{"negative revision history", nested("global.revisionHistoryLimit", -1), "at '/global/revisionHistoryLimit': minimum: got -1, want 0"},
	{"webhook timeout above 30", nested("webhooks.timeoutSeconds", 31), "at '/webhooks/timeoutSeconds': maximum: got 31, want 30"},
	{"port 0", nested("global.ports.metrics", 0), "at '/global/ports/metrics': minimum: got 0, want 1"},
	{"port 65536", nested("global.ports.health", 65536), "at '/global/ports/health': maximum: got 65,536, want 65,535"},
	{"unknown failure policy", nested("webhooks.failurePolicy", "Sometimes"), "at '/webhooks/failurePolicy': value must be one of 'Fail', 'Ignore'"},
	{"unknown certificate mode", nested("webhooks.certs.mode", "manual"), "at '/webhooks/certs/mode': value must be one of 'selfSigned', 'certManager'"},
	{"unknown pull policy", nested("global.image.pullPolicy", "Sometimes"), "at '/global/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'"},
	{"unknown log format", nested("global.logFormat", "xml"), "at '/global/logFormat': value must be one of 'json', 'console'"},
	{"unknown DNS policy", nested("global.dnsPolicy", "Sometimes"), "at '/global/dnsPolicy': value must be one of '', 'ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'"},
	{"unknown architecture", nested("global.nodeArchitectures", []any{"sparc"}), "at '/global/nodeArchitectures/0': value must be one of"},
	{"no architecture", nested("global.nodeArchitectures", []any{}), "at '/global/nodeArchitectures': minItems: got 0, want 1"},
	{"interval without a unit", nested("metrics.serviceMonitor.interval", "30"), "at '/metrics/serviceMonitor/interval': '30' does not match pattern"},
	{"alerts without the scrapes they select", nested("metrics.prometheusRule.enabled", true),
		"metrics.prometheusRule.enabled=true needs metrics.serviceMonitor.enabled=true"},
	{"certificate warning after the critical threshold", map[string]any{"metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true, "certificateExpiry": map[string]any{"warningDays": 2, "criticalDays": 3}}}},
		"metrics.prometheusRule.certificateExpiry: criticalDays (3) must be below warningDays (2)"},
	{"certificate threshold not positive", nested("metrics.prometheusRule.certificateExpiry.criticalDays", 0),
		"at '/metrics/prometheusRule/certificateExpiry/criticalDays': exclusiveMinimum: got 0, want 0"},
	{"nameOverride not a name", nested("nameOverride", "Bad_Name"), "at '/nameOverride': 'Bad_Name' does not match pattern"},
	{"unknown log level", nested("global.logLevel", "verbose"), "at '/global/logLevel': 'verbose' does not match pattern"},
	{"log verbosity above 127", nested("workloadSizer.logLevel", "128"), "at '/workloadSizer/logLevel': '128' does not match pattern"},
	{"lease duration without a unit", nested("global.leaderElection.leaseDuration", "15"), "at '/global/leaderElection/leaseDuration': '15' does not match pattern"},
	{"retry period a word", nested("pipelineController.leaderElection.retryPeriod", "often"), "at '/pipelineController/leaderElection/retryPeriod': 'often' does not match pattern"},
	{"hold of no cpu", nested("pipelineController.modelCache.hold.cpu", "0"),
		"at '/pipelineController/modelCache/hold/cpu': '0' does not match pattern"},
	{"hold memory a word", nested("pipelineController.modelCache.hold.memory", "some"),
		"at '/pipelineController/modelCache/hold/memory': 'some' does not match pattern"},
	{"proxy without a scheme", nested("pipelineController.modelCache.proxy.httpsProxy", "proxy.corp:3128"),
		"at '/pipelineController/modelCache/proxy/httpsProxy': 'proxy.corp:3128' does not match pattern"},
	{"proxy with credentials", nested("pipelineController.modelCache.proxy.httpProxy", "http://user:secret@proxy.corp:3128"),
		"at '/pipelineController/modelCache/proxy/httpProxy': 'http://user:secret@proxy.corp:3128' does not match pattern"},
	{"CA bundle that is no PEM", nested("pipelineController.modelCache.caBundle", "corp-ca"),
		"at '/pipelineController/modelCache/caBundle': 'corp-ca' does not match pattern"},
	{"no-proxy list with spaces", nested("pipelineController.modelCache.proxy.noProxy", ".svc, .corp"),
		"at '/pipelineController/modelCache/proxy/noProxy': '.svc, .corp' does not match pattern"},
	{"empty registry", nested("global.image.registry", ""), "at '/global/image/registry': '' does not match pattern"},
	{"repository with capitals", nested("daemonsetController.image.repository", "Keelson"), "at '/daemonsetController/image/repository': 'Keelson' does not match pattern"},
	{"tag with a space", nested("global.image.tag", "v1 latest"), "at '/global/image/tag': 'v1 latest' does not match pattern"},
	{"budget above 100%", nested("pipelineController.pdb", map[string]any{"minAvailable": "150%", "maxUnavailable": nil}),
		"at '/pipelineController/pdb/minAvailable': '150%' does not match pattern '^(100|[1-9]?[0-9])%$'"},
	{"label key with a space", nested("commonLabels", map[string]any{"bad key": "x"}), "at '/commonLabels': additional properties 'bad key' not allowed"},
	{"label value too long", nested("global.podLabels", map[string]any{"team": strings.Repeat("t", 64)}), "at '/global/podLabels/team': '" + strings.Repeat("t", 64) + "' does not match pattern"},
	{"pod label the chart sets", nested("workloadSizer.podLabels", map[string]any{"app.kubernetes.io/name": "x"}),
		"workloadSizer.podLabels: app.kubernetes.io/name is a label the chart sets itself"},
	{"common label the chart sets", nested("commonLabels", map[string]any{"app.kubernetes.io/instance": "x"}),
		"commonLabels: app.kubernetes.io/instance is a label the chart sets itself"},
	{"node selector value with a space", nested("global.nodeSelector", map[string]any{"pool": "system nodes"}), "at '/global/nodeSelector/pool': 'system nodes' does not match pattern"},
	{"annotation key with a space", nested("daemonsetController.podAnnotations", map[string]any{"my note": "x"}),
		"at '/daemonsetController/podAnnotations': additional properties 'my note' not allowed"},
	{"dnsPolicy None without a resolver", nested("global.dnsPolicy", "None"),
		"daemonsetController.dnsPolicy=None needs daemonsetController.dnsConfig.nameservers (or global.dnsConfig)"},
	{"dnsConfig with a misspelt key", nested("global.dnsConfig.nameserver", []any{"10.0.0.10"}), "at '/global/dnsConfig': additional properties 'nameserver' not allowed"},
	{"network policy egress port 0", nested("networkPolicy.egress.apiServerPorts", []any{0}), "at '/networkPolicy/egress/apiServerPorts/0': minimum: got 0, want 1"},
	{"network policy misspelt key", nested("networkPolicy.webhooksFrom", []any{}), "at '/networkPolicy': additional properties 'webhooksFrom' not allowed"},
	{"helm test namespace not a name", nested("tests.admissionNamespace", "Team A"), "at '/tests/admissionNamespace': 'Team A' does not match pattern"},
	{"uninstall hook timeout too short", nested("crds.uninstallHookTimeoutSeconds", 1), "at '/crds/uninstallHookTimeoutSeconds': minimum: got 1, want 10"},
	{"webhook selector value a number", nested("webhooks.namespaceSelector.matchLabels.env", 1), "at '/webhooks/namespaceSelector/matchLabels/env': got number, want string"},
}

// Garbage in the values is refused when the chart is rendered, before anything reaches the cluster, with a line that
// names the value and says what is wrong with it.
func TestGarbageValuesAreRefusedNamingTheValue(t *testing.T) {
	if len(garbageValues) < 40 {
		t.Fatalf("%d garbage values; the table keeps at least 40", len(garbageValues))
	}
	var table strings.Builder
	for _, tc := range garbageValues {
		_, err := render(tc.vals)
		switch {
		case err == nil:
			t.Errorf("%s: rendered, want refused with %q", tc.what, tc.want)
			continue
		case !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: got %v\nwant a line containing %q", tc.what, err, tc.want)
			continue
		}
		line := tc.want
		for _, l := range strings.Split(err.Error(), "\n") {
			if strings.Contains(l, tc.want) {
				line = strings.TrimPrefix(strings.TrimSpace(l), "- ")
			}
		}
		fmt.Fprintf(&table, "| %s | `%s` | `%s` |\n", tc.what, flatValues(tc.vals), strings.ReplaceAll(line, "|", "\\|"))
	}
	if out := os.Getenv("KEELSON_CHART_GARBAGE_TABLE"); out != "" {
		if err := os.WriteFile(filepath.Clean(out), []byte(table.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// flatValues renders values as the --set flags that give them.
func flatValues(vals map[string]any) string {
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		m, ok := v.(map[string]any)
		if !ok || len(m) == 0 {
			s := fmt.Sprint(v)
			switch v := v.(type) {
			case string:
				s = fmt.Sprintf("%q", v)
			case nil:
				s = "null"
			case []any:
				var items []string
				for _, item := range v {
					items = append(items, fmt.Sprint(item))
				}
				s = "{" + strings.Join(items, ",") + "}"
			case map[string]any:
				s = "{}"
			}
			out = append(out, prefix+"="+s)
			return
		}
		for k, sub := range m {
			key := k
			if strings.ContainsAny(k, "./ ") {
				key = strings.ReplaceAll(k, ".", `\.`)
			}
			if prefix != "" {
				key = prefix + "." + key
			}
			walk(key, sub)
		}
	}
	walk("", vals)
	sort.Strings(out)
	if s := strings.Join(out, " "); len(s) <= 70 {
		return s
	}
	return strings.Join(out, " ")[:67] + "..."
}
