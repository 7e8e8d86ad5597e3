package charts_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"
)

// change is one entry of Artifact Hub's artifacthub.io/changes annotation.
type change struct {
	Kind        string `json:"kind"`
	Description string `json:"description"`
}

// changelogEntries reads the entries of one version's section of CHANGELOG.md: "### Kind" headings, "- " items.
func changelogEntries(text, version string) []change {
	_, section, found := strings.Cut(text, "\n## "+version+"\n")
	if !found {
		return nil
	}
	section, _, _ = strings.Cut(section, "\n## ")
	heading := regexp.MustCompile(`^### (\w+)$`)
	var out []change
	kind := ""
	for _, line := range strings.Split(section, "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			kind = strings.ToLower(m[1])
		} else if item, ok := strings.CutPrefix(line, "- "); ok {
			out = append(out, change{Kind: kind, Description: item})
		}
	}
	return out
}

// The chart's artifacthub.io/changes annotation is the CHANGELOG's section of the chart's version, word for word,
// and that section exists: a release cannot ship without saying what changed.
func TestChangesAnnotationFollowsTheChangelog(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	want := changelogEntries(string(text), chrt.Metadata.Version)
	if len(want) == 0 {
		t.Fatalf("CHANGELOG.md has no entries under \"## %s\", the chart's version", chrt.Metadata.Version)
	}
	var got []change
	if err := yaml.Unmarshal([]byte(chrt.Metadata.Annotations["artifacthub.io/changes"]), &got); err != nil {
		t.Fatalf("artifacthub.io/changes: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("artifacthub.io/changes differs from CHANGELOG.md's %s section (-changelog +annotation):\n%s", chrt.Metadata.Version, diff)
	}
	for _, c := range got {
		switch c.Kind {
		case "added", "changed", "deprecated", "removed", "fixed", "security":
		default:
			t.Errorf("%q: kind %q is not one Artifact Hub knows", c.Description, c.Kind)
		}
	}
}
