package pipelinespec_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/keelson-dev/keelson/internal/pipelinespec"
)

// A step's model form decides where it comes from.
func TestSourceOf(t *testing.T) {
	g := NewWithT(t)
	for model, want := range map[string]pipelinespec.ModelSource{
		"":                            pipelinespec.ModelOnStorage,
		"face/detect":                 pipelinespec.ModelOnStorage,
		"pvc://models/face":           pipelinespec.ModelOnClaim,
		"PVC://models/face":           pipelinespec.ModelOnClaim,
		"https://models.example/m.gz": pipelinespec.ModelFetched,
		"s3://bucket/prefix":          pipelinespec.ModelFetched,
		"file:///etc/shadow":          pipelinespec.ModelFetched, // refused by the fetch's parser, as any unknown scheme
	} {
		g.Expect(pipelinespec.SourceOf(model)).To(Equal(want), model)
	}
}

// pvc://claim/path names a claim of the namespace and a directory inside it; anything else is refused with a
// reason.
func TestParseClaimModel(t *testing.T) {
	g := NewWithT(t)
	for model, want := range map[string][2]string{
		"pvc://models":                 {"models", ""},
		"pvc://models/":                {"models", ""},
		"pvc://models/face/detect/":    {"models", "face/detect"},
		"pvc://models.v2/face":         {"models.v2", "face"},
		"PVC://models/face":            {"models", "face"},
		"pvc://models/face%20detect/1": {"models", "face detect/1"},
	} {
		claim, sub, err := pipelinespec.ParseClaimModel(model)
		g.Expect(err).NotTo(HaveOccurred(), model)
		g.Expect([2]string{claim, sub}).To(Equal(want), model)
	}
	for model, why := range map[string]string{
		"pvc:///face":                  "no claim",
		"pvc://Models_1/face":          "claim \"Models_1\"",
		"pvc://models/face/../../etc":  "'..'",
		"pvc://models/..":              "'..'",
		"pvc://user@models/face":       "no user",
		"pvc://models:80/face":         "no user, port",
		"pvc://models/face?rev=2":      "query",
		"pvc://models/face#sha256=abc": "no digest",
		"pvc://models/a%2F..%2Fb":      "'..'",
		"https://models/face":          "scheme",
	} {
		_, _, err := pipelinespec.ParseClaimModel(model)
		g.Expect(err).To(MatchError(ContainSubstring(why)), model)
	}
}
