package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/keelson-dev/keelson/tools/internal/oci"
)

// binaries are the images' binaries.
var binaries = []string{"daemonset-controller", "workload-sizer", "pipeline-controller"}

// The Dockerfile builds the same layout as this tool: tini at TiniPath, the binary at /<name>, user 65532, and
// tini as PID 1 in the entrypoint. Docker cannot run on every machine, so the Dockerfile is checked as text.
func TestDockerfileMatchesTheLayout(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{"COPY --from=tini /tini " + oci.TiniPath + "\n", "USER " + oci.User + "\n", "cp /usr/bin/tini-static /tini"} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", strings.TrimSpace(want))
		}
	}
	for _, name := range binaries {
		stage := regexp.MustCompile(`(?s)FROM base AS ` + name + `\n(.*?)(\n\n|$)`).FindStringSubmatch(df)
		if stage == nil {
			t.Errorf("no final stage %s", name)
			continue
		}
		if !strings.Contains(stage[1], "COPY --from=build /out/"+name+" /"+name) {
			t.Errorf("stage %s does not copy the binary to /%s", name, name)
		}
		entry, _ := json.Marshal(oci.Entrypoint(name))
		want := "ENTRYPOINT " + strings.ReplaceAll(string(entry), ",", ", ")
		if !strings.Contains(stage[1], want) {
			t.Errorf("stage %s: want %s", name, want)
		}
	}
}
