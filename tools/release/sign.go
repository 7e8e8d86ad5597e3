package main

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	sigdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// The formats below are cosign's (its signature and attestation specs), so `cosign verify --key` and `cosign
// verify-attestation --key` check what a release pushed, as Verify here does. They are written with
// go-containerregistry and sigstore's own signature packages rather than by running cosign: cosign's module is
// several hundred modules the release would build for four small objects.
const (
	// simpleSigningMediaType is the media type of a signature layer: the signed payload itself.
	simpleSigningMediaType types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// dsseMediaType is the media type of an attestation layer: a DSSE envelope of an in-toto statement.
	dsseMediaType types.MediaType = "application/vnd.dsse.envelope.v1+json"
	// signatureAnnotation holds a signature layer's signature, base64.
	signatureAnnotation = "dev.cosignproject.cosign/signature"
	// predicateTypeAnnotation names an attestation layer's predicate type.
	predicateTypeAnnotation = "predicateType"
	// inTotoPayloadType is the DSSE payload type of an in-toto statement.
	inTotoPayloadType = "application/vnd.in-toto+json"
	// inTotoStatementType is the statement version cosign writes and reads.
	inTotoStatementType = "https://in-toto.io/Statement/v0.1"
)

// loadSigner reads a signing key: a PEM private key (PKCS#8, EC or PKCS#1), or one `cosign generate-key-pair`
// wrote, encrypted with the password in COSIGN_PASSWORD (cosign's own convention).
func loadSigner(path string) (signature.SignerVerifier, error) {
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, func(bool) ([]byte, error) {
		return []byte(os.Getenv("COSIGN_PASSWORD")), nil
	})
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return signature.LoadSignerVerifier(key, crypto.SHA256)
}

// suffixTag is where cosign keeps what is attached to digest d: <repository>:sha256-<hex>.<suffix>.
func suffixTag(d name.Digest, suffix string) (name.Tag, error) {
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return name.Tag{}, err
	}
	return name.NewTag(d.Context().Name()+":"+h.Algorithm+"-"+h.Hex+"."+suffix, nameOptsOf(d)...)
}

// nameOptsOf keeps a reference's registry scheme (plain HTTP in tests) for the references made from it.
func nameOptsOf(d name.Digest) []name.Option {
	if d.Context().Scheme() == "http" {
		return []name.Option{name.Insecure}
	}
	return nil
}

// signatureImage is one cosign signature of d: a layer holding the simple-signing payload, with its signature.
func signatureImage(sv signature.Signer, d name.Digest, claimed string) (v1.Image, error) {
	body, err := payload.Cosign{Image: d, ClaimedIdentity: claimed}.MarshalJSON()
	if err != nil {
		return nil, err
	}
	sig, err := sv.SignMessage(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return attachment(static.NewLayer(body, simpleSigningMediaType),
		map[string]string{signatureAnnotation: base64.StdEncoding.EncodeToString(sig)})
}

// statement is an in-toto statement about one artifact: a few fields the attestation spec fixes, written here
// as a struct of its own rather than through the in-toto module's protobuf types.
type statement struct {
	Type          string    `json:"_type"`
	PredicateType string    `json:"predicateType"`
	Subject       []subject `json:"subject"`
	Predicate     any       `json:"predicate"`
}

// subject names the artifact a statement is about, by digest.
type subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// attestationLayer is a DSSE envelope, signed by sv, of a statement that d is described by predicate.
func attestationLayer(sv signature.Signer, d name.Digest, predicateType string, predicate any) (v1.Layer, map[string]string, error) {
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return nil, nil, err
	}
	st, err := json.Marshal(statement{Type: inTotoStatementType, PredicateType: predicateType, Predicate: predicate,
		Subject: []subject{{Name: d.Context().Name(), Digest: map[string]string{h.Algorithm: h.Hex}}}})
	if err != nil {
		return nil, nil, err
	}
	env, err := sigdsse.WrapSigner(sv, inTotoPayloadType).SignMessage(bytes.NewReader(st))
	if err != nil {
		return nil, nil, err
	}
	return static.NewLayer(env, dsseMediaType), map[string]string{predicateTypeAnnotation: predicateType}, nil
}

// attachmentBase is the OCI image cosign stores attachments in, before its layers: an empty config.
func attachmentBase() v1.Image {
	return mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1)
}

// attachment is an attachment image with the one given layer.
func attachment(l v1.Layer, annotations map[string]string) (v1.Image, error) {
	return mutate.Append(attachmentBase(), mutate.Addendum{Layer: l, Annotations: annotations})
}

// predicate is one attestation to attach: its type and body.
type predicate struct {
	Type string
	Body any
}

// sign pushes a signature of d and, when there are predicates, one attestation image holding each of them.
func (r Release) sign(ctx context.Context, sv signature.Signer, d name.Digest, claimed string, predicates ...predicate) error {
	opts := r.remoteOptions(ctx)
	sigImg, err := signatureImage(sv, d, claimed)
	if err != nil {
		return err
	}
	sigTag, err := suffixTag(d, "sig")
	if err != nil {
		return err
	}
	if err := remote.Write(sigTag, sigImg, opts...); err != nil {
		return fmt.Errorf("pushing the signature of %s: %w", d, err)
	}
	if len(predicates) == 0 {
		return nil
	}
	img := attachmentBase()
	for _, p := range predicates {
		l, ann, err := attestationLayer(sv, d, p.Type, p.Body)
		if err != nil {
			return err
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: l, Annotations: ann}); err != nil {
			return err
		}
	}
	attTag, err := suffixTag(d, "att")
	if err != nil {
		return err
	}
	if err := remote.Write(attTag, img, opts...); err != nil {
		return fmt.Errorf("pushing the attestations of %s: %w", d, err)
	}
	var kinds []string
	for _, p := range predicates {
		kinds = append(kinds, p.Type)
	}
	r.logf("signed %s, attested %s", d, strings.Join(kinds, ", "))
	return nil
}
