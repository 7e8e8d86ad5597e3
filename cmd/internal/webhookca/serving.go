package webhookca

import (
	"bytes"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"time"
)

// ServingCert is the certificate the webhook server presents, read by the TLS handshake from memory. The
// certificate pass swaps it as soon as the Secret holds one every CA bundle trusts, so no replica waits for the
// kubelet to project the Secret into its pod (a minute or two after a write).
type ServingCert struct {
	current atomic.Pointer[tls.Certificate]
}

// ErrNoCertificate fails handshakes until the first certificate is chosen.
var ErrNoCertificate = errors.New("no webhook serving certificate yet")

// GetCertificate is the webhook server's tls.Config.GetCertificate.
func (s *ServingCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.current.Load(); c != nil {
		return c, nil
	}
	return nil, ErrNoCertificate
}

// Get returns the certificate served now, nil before the first.
func (s *ServingCert) Get() *tls.Certificate { return s.current.Load() }

// Set makes c the served certificate.
func (s *ServingCert) Set(c *tls.Certificate) { s.current.Store(c) }

// TLSOption points a TLS config's GetCertificate at s.
func (s *ServingCert) TLSOption(c *tls.Config) { c.GetCertificate = s.GetCertificate }

// ChooseServing picks the certificate to serve at now: the candidate from the Secret once every CA bundle trusts
// it, else the one served now (nil before the first). During a CA rotation the Secret holds a certificate of the
// new CA before the injector has put that CA into every bundle; serving it then would fail the apiserver's calls
// through a bundle that lacks it, so the old certificate stays until none does.
func ChooseServing(current, candidate *tls.Certificate, bundles [][]byte, now time.Time) *tls.Certificate {
	if candidate == nil || candidate.Leaf == nil {
		return current
	}
	if current != nil && len(current.Certificate) > 0 && bytes.Equal(current.Certificate[0], candidate.Certificate[0]) {
		return current
	}
	if !TrustedByAll(candidate.Leaf, bundles, now) {
		return current
	}
	return candidate
}
