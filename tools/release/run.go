package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/sigstore/sigstore/pkg/signature"
	"helm.sh/helm/v3/pkg/chart"
)

// Run builds every binary for every platform, pushes one image index per binary tagged with the chart's
// appVersion, then packages and pushes the chart. Everything is pushed by digest, signed and verified before any
// tag points at it, and the chart's tag comes last: a release that fails half-way leaves no tag a user could pull
// unsigned, and runs again to the end (a tag of the same build is accepted; the builds are reproducible).
func (r Release) Run(ctx context.Context) (*Result, error) {
	start := time.Now()
	meta, err := chartMetadata(path.Join(r.Root, r.ChartDir))
	if err != nil {
		return nil, err
	}
	for _, p := range r.Platforms {
		if _, err := os.Stat(r.Tini[p.Architecture]); err != nil {
			return nil, fmt.Errorf("tini for %s: %w (tools/install.sh tini-%s fetches Debian's)", p.Architecture, err, p.Architecture)
		}
	}
	if r.Signer == nil && !r.Unsigned {
		return nil, errors.New("no signing key: give one (make release SIGNING_KEY=<cosign or PEM private key>), or say the release is unsigned")
	}
	work, err := os.MkdirTemp("", "keelson-release-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()

	res := &Result{Version: meta.AppVersion, ChartVersion: meta.Version, Images: map[string]name.Digest{},
		Platforms: map[string][]platformImage{}}
	indexes := map[string]v1.ImageIndex{}
	for _, b := range r.Binaries {
		ref, err := r.imageRef(b, meta.AppVersion)
		if err != nil {
			return nil, err
		}
		if indexes[b], res.Images[b], res.Platforms[b], err = r.buildImage(ctx, work, b, ref); err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
	}
	if err := r.refuseOverwrite(ctx, meta, res); err != nil {
		return nil, err
	}
	for _, b := range r.Binaries {
		if err := remote.WriteIndex(res.Images[b], indexes[b], r.remoteOptions(ctx)...); err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
		ref, _ := r.imageRef(b, meta.AppVersion)
		if err := r.signImage(ctx, b, ref, res, start); err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
	}
	if r.Signer != nil {
		if err := r.verifyImages(ctx, res); err != nil {
			return nil, err
		}
	}
	for _, b := range r.Binaries {
		ref, _ := r.imageRef(b, meta.AppVersion)
		if err := remote.Tag(ref, indexes[b], r.remoteOptions(ctx)...); err != nil {
			return nil, fmt.Errorf("%s: tagging %s: %w", b, ref, err)
		}
		r.logf("pushed %s as %s", res.Images[b], ref)
	}
	// The chart last: its tag is what says the release is out. Helm pushes it tagged, so it is signed right after.
	if res.Chart, err = r.pushChart(ctx, work); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	if r.Signer != nil {
		claimed := res.ChartRepository() + ":" + meta.Version
		if err := r.sign(ctx, r.Signer, res.Chart, claimed, predicate{slsaProvenancePredicateType,
			r.provenanceOf("chart "+meta.Name, meta.Version, "", start)}); err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
		if err := r.verify(ctx, res.Chart, slsaProvenancePredicateType); err != nil {
			return nil, err
		}
	}
	r.logf("pushed %s (%s in all)", res.Chart, time.Since(start).Round(time.Second))
	return res, nil
}

// signImage signs binary's index and each platform's image; each platform image gets its SBOM and its provenance
// attested, the index its provenance.
func (r Release) signImage(ctx context.Context, binary string, ref name.Tag, res *Result, start time.Time) error {
	if r.Signer == nil {
		return nil
	}
	claimed := ref.Name()
	for _, p := range res.Platforms[binary] {
		bom, err := sbom(p.Binary, res.Version)
		if err != nil {
			return err
		}
		if err := r.sign(ctx, r.Signer, p.Digest, claimed,
			predicate{cycloneDXPredicateType, bom},
			predicate{slsaProvenancePredicateType, r.provenanceOf("image "+binary, res.Version, p.Platform.String(), start)}); err != nil {
			return err
		}
	}
	return r.sign(ctx, r.Signer, res.Images[binary], claimed,
		predicate{slsaProvenancePredicateType, r.provenanceOf("image index "+binary, res.Version, "", start)})
}

// verify checks d's signature and that the wanted predicates are attested, as a user's `cosign verify` would.
func (r Release) verify(ctx context.Context, d name.Digest, want ...string) error {
	pub, err := r.Signer.PublicKey()
	if err != nil {
		return err
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return err
	}
	got, err := Verify(ctx, v, d)
	if err != nil {
		return err
	}
	for _, w := range want {
		if _, ok := got[w]; !ok {
			return fmt.Errorf("%s: no %s attestation", d, w)
		}
	}
	return nil
}

// verifyImages checks what the release signed of the images before any tag points at them.
func (r Release) verifyImages(ctx context.Context, res *Result) error {
	for _, b := range r.Binaries {
		if err := r.verify(ctx, res.Images[b], slsaProvenancePredicateType); err != nil {
			return err
		}
		for _, p := range res.Platforms[b] {
			if err := r.verify(ctx, p.Digest, cycloneDXPredicateType, slsaProvenancePredicateType); err != nil {
				return err
			}
		}
	}
	return nil
}

// refuseOverwrite fails when a tag the release would push is already in the registry with other content: a
// version is pushed once, and a second push would change what users who pinned it pull. An image tag that holds
// this very build (a release that failed after tagging, run again) is accepted; the chart's tag, pushed last, means
// the release is out.
func (r Release) refuseOverwrite(ctx context.Context, meta *chart.Metadata, res *Result) error {
	for _, b := range r.Binaries {
		ref, err := r.imageRef(b, meta.AppVersion)
		if err != nil {
			return err
		}
		desc, found, err := r.head(ctx, ref)
		if err != nil {
			return err
		}
		if found && desc.Digest.String() != res.Images[b].DigestStr() {
			return fmt.Errorf("%s is already pushed, as %s: a released version is never pushed again (bump the chart's version and appVersion)", ref, desc.Digest)
		}
	}
	chartTag, err := name.NewTag(fmt.Sprintf("%s/%s/charts/%s:%s", r.Registry, r.Repository, meta.Name, meta.Version), r.nameOptions()...)
	if err != nil {
		return err
	}
	if _, found, err := r.head(ctx, chartTag); err != nil {
		return err
	} else if found {
		return fmt.Errorf("%s is already pushed: a released version is never pushed again (bump the chart's version and appVersion)", chartTag)
	}
	return nil
}

// head looks a tag up. A registry that answers 401 or 403 for a repository it does not have yet (some do, before
// the first push) counts as not found: the push then says whether the credentials allow it.
func (r Release) head(ctx context.Context, t name.Tag) (*v1.Descriptor, bool, error) {
	desc, err := remote.Head(t, r.remoteOptions(ctx)...)
	var terr *transport.Error
	switch {
	case err == nil:
		return desc, true, nil
	case errors.As(err, &terr) && (terr.StatusCode == http.StatusNotFound || terr.StatusCode == http.StatusUnauthorized ||
		terr.StatusCode == http.StatusForbidden):
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("looking for %s: %w", t, err)
	}
}
