package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// cycloneDXPredicateType is the predicate type cosign gives a CycloneDX SBOM attestation.
const cycloneDXPredicateType = "https://cyclonedx.org/bom"

// sbom is the CycloneDX bill of materials of one binary, read from the build information the Go toolchain stamps
// into it (`go version -m`): the Go release, the main module and every module linked in, each as a package URL with
// its checksum. It describes the binary as shipped, not the repository: a module the build left out is not in it.
func sbom(path, version string) (json.RawMessage, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("build information of %s: %w", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuidOf(sum[:])
	bom.Metadata = &cdx.Metadata{Component: &cdx.Component{
		Type: cdx.ComponentTypeApplication, BOMRef: info.Main.Path + "@" + version, Name: info.Path, Version: version,
		PackageURL: purl(info.Main.Path, version),
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
		Properties: &[]cdx.Property{{Name: "go", Value: info.GoVersion}},
	}}
	components := []cdx.Component{{Type: cdx.ComponentTypeLibrary, BOMRef: "golang/stdlib@" + info.GoVersion, Name: "stdlib",
		Version: info.GoVersion, PackageURL: purl("stdlib", info.GoVersion)}}
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		c := cdx.Component{Type: cdx.ComponentTypeLibrary, BOMRef: m.Path + "@" + m.Version, Name: m.Path,
			Version: m.Version, PackageURL: purl(m.Path, m.Version)}
		if m.Sum != "" {
			c.Properties = &[]cdx.Property{{Name: "go.sum", Value: m.Sum}}
		}
		components = append(components, c)
	}
	bom.Components = &components
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).Encode(bom); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// purl is a Go module's package URL.
func purl(module, version string) string { return "pkg:golang/" + module + "@" + version }

// uuidOf formats the first 16 bytes of b as a version-4-shaped UUID: a serial number that is the same for the same
// binary, so two runs of a reproducible build attach the same document.
func uuidOf(b []byte) string {
	u := append([]byte(nil), b[:16]...)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
