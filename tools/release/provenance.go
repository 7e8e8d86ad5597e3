package main

import (
	"time"
)

// slsaProvenancePredicateType is SLSA provenance v1's predicate type.
const slsaProvenancePredicateType = "https://slsa.dev/provenance/v1"

// The release's build type and builder: what a verifier pins a policy to. The build type's parameters are the
// fields of buildParameters.
const (
	releaseBuildType = "https://github.com/keelson-dev/keelson/blob/main/docs/chart.md#releasing-signatures-sboms-provenance"
	releaseBuilderID = "https://github.com/keelson-dev/keelson/tools/release"
)

// provenance is a SLSA v1 provenance predicate: how one artifact of the release was made (written as its spec's
// JSON; the fields here are all the release can say).
type provenance struct {
	BuildDefinition buildDefinition `json:"buildDefinition"`
	RunDetails      runDetails      `json:"runDetails"`
}

type buildDefinition struct {
	BuildType            string               `json:"buildType"`
	ExternalParameters   buildParameters      `json:"externalParameters"`
	ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies,omitempty"`
}

// buildParameters are what the release was asked to build.
type buildParameters struct {
	// Artifact is what was built: a controller's image for one platform, an image index, or the chart.
	Artifact string `json:"artifact"`
	// Version is the chart's appVersion, every image's tag.
	Version string `json:"version"`
	// Platform is the image's os/architecture, when there is one.
	Platform string `json:"platform,omitempty"`
	// GitCommit and BuildDate are stamped into the binaries.
	GitCommit string `json:"gitCommit"`
	BuildDate string `json:"buildDate"`
}

type resourceDescriptor struct {
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest,omitempty"`
}

type runDetails struct {
	Builder  builder  `json:"builder"`
	Metadata metadata `json:"metadata"`
}

type builder struct {
	ID string `json:"id"`
}

type metadata struct {
	StartedOn  string `json:"startedOn"`
	FinishedOn string `json:"finishedOn"`
}

// provenanceOf is the provenance of one artifact of the release, started at start.
func (r Release) provenanceOf(artifact, version, platform string, start time.Time) provenance {
	p := provenance{
		BuildDefinition: buildDefinition{BuildType: releaseBuildType, ExternalParameters: buildParameters{
			Artifact: artifact, Version: version, Platform: platform, GitCommit: r.GitCommit, BuildDate: r.BuildDate}},
		RunDetails: runDetails{Builder: builder{ID: releaseBuilderID},
			Metadata: metadata{StartedOn: start.UTC().Format(time.RFC3339), FinishedOn: time.Now().UTC().Format(time.RFC3339)}},
	}
	if r.GitCommit != "" && r.GitCommit != "unknown" {
		p.BuildDefinition.ResolvedDependencies = []resourceDescriptor{{URI: "git+https://github.com/keelson-dev/keelson",
			Digest: map[string]string{"gitCommit": r.GitCommit}}}
	}
	return p
}
