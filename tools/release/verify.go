package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Attested is what Verify found attached to an artifact and checked: the predicates by type.
type Attested map[string]json.RawMessage

// Verify checks, as `cosign verify --key` and `cosign verify-attestation --key` would, that d carries a signature
// by pub whose payload names d, and that every attestation attached to d is signed by pub and is about d. It
// returns the attested predicates by type.
func Verify(ctx context.Context, pub signature.Verifier, d name.Digest) (Attested, error) {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	sigTag, err := suffixTag(d, "sig")
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(sigTag, opts...)
	if err != nil {
		return nil, fmt.Errorf("no signature of %s: %w", d, err)
	}
	if err := eachLayer(img, simpleSigningMediaType, func(body []byte, ann map[string]string) error {
		var p payload.SimpleContainerImage
		if err := json.Unmarshal(body, &p); err != nil {
			return err
		}
		if p.Critical.Image.DockerManifestDigest != d.DigestStr() || p.Critical.Type != payload.CosignSignatureType {
			return fmt.Errorf("the signature is of %s, not %s", p.Critical.Image.DockerManifestDigest, d.DigestStr())
		}
		sig, err := base64.StdEncoding.DecodeString(ann[signatureAnnotation])
		if err != nil {
			return err
		}
		return pub.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body))
	}); err != nil {
		return nil, fmt.Errorf("signature of %s: %w", d, err)
	}

	out := Attested{}
	attTag, err := suffixTag(d, "att")
	if err != nil {
		return nil, err
	}
	att, err := remote.Image(attTag, opts...)
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == 404 {
		return out, nil // signed, with nothing attested
	}
	if err != nil {
		return nil, fmt.Errorf("attestations of %s: %w", d, err)
	}
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return nil, err
	}
	verifier := sigdsse.WrapVerifier(pub)
	err = eachLayer(att, dsseMediaType, func(body []byte, ann map[string]string) error {
		if err := verifier.VerifySignature(bytes.NewReader(body), nil); err != nil {
			return err
		}
		var env dsse.Envelope
		if err := json.Unmarshal(body, &env); err != nil {
			return err
		}
		raw, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			return err
		}
		var st struct {
			statement
			Predicate json.RawMessage `json:"predicate"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return err
		}
		if env.PayloadType != inTotoPayloadType || !slices.ContainsFunc(st.Subject, func(s subject) bool { return s.Digest[h.Algorithm] == h.Hex }) {
			return fmt.Errorf("an attestation (%s) about another artifact", st.PredicateType)
		}
		if ann[predicateTypeAnnotation] != st.PredicateType {
			return fmt.Errorf("an attestation annotated %s holds %s", ann[predicateTypeAnnotation], st.PredicateType)
		}
		out[st.PredicateType] = st.Predicate
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("attestations of %s: %w", d, err)
	}
	return out, nil
}

// eachLayer calls f with the content and annotations of each of img's layers, all of which must be of mediaType;
// an image without a layer fails.
func eachLayer(img v1.Image, mediaType types.MediaType, f func(body []byte, annotations map[string]string) error) error {
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	if len(m.Layers) == 0 {
		return errors.New("nothing attached")
	}
	for _, desc := range m.Layers {
		if desc.MediaType != mediaType {
			return fmt.Errorf("a layer of type %s, want %s", desc.MediaType, mediaType)
		}
		l, err := img.LayerByDigest(desc.Digest)
		if err != nil {
			return err
		}
		// The blob as pushed: attachments are stored uncompressed, whatever their layer says.
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		body, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return err
		}
		if err := f(body, desc.Annotations); err != nil {
			return err
		}
	}
	return nil
}
