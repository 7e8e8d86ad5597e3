package manager

import (
	"bytes"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"time"
)

// servingCert is the certificate the webhook server presents, read by the TLS handshake from memory. The
// certificate pass swaps it as soon as the Secret holds one every CA bundle trusts, so no replica waits for the
// kubelet to project the Secret into its pod (a minute or two after a write).
type servingCert struct {
	current atomic.Pointer[tls.Certificate]
}

// errNoCertificate fails handshakes until the first certificate is chosen.
var errNoCertificate = errors.New("no webhook serving certificate yet")

// GetCertificate is the webhook server's tls.Config.GetCertificate.
func (s *servingCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.current.Load(); c != nil {
		return c, nil
	}
	return nil, errNoCertificate
}

// get returns the certificate served now, nil before the first.
func (s *servingCert) get() *tls.Certificate { return s.current.Load() }

// set makes c the served certificate.
func (s *servingCert) set(c *tls.Certificate) { s.current.Store(c) }

// tlsOption points a TLS config's GetCertificate at s.
func (s *servingCert) tlsOption(c *tls.Config) { c.GetCertificate = s.GetCertificate }

// chooseServing picks the certificate to serve at now: the candidate from the Secret once every CA bundle trusts
// it, else the one served now (nil before the first). During a CA rotation the Secret holds a certificate of the
// new CA before the injector has put that CA into every bundle; serving it then would fail the apiserver's calls
// through a bundle that lacks it, so the old certificate stays until none does.
func chooseServing(current, candidate *tls.Certificate, bundles [][]byte, now time.Time) *tls.Certificate {
	if candidate == nil || candidate.Leaf == nil {
		return current
	}
	if current != nil && len(current.Certificate) > 0 && bytes.Equal(current.Certificate[0], candidate.Certificate[0]) {
		return current
	}
	if !trustedByAll(candidate.Leaf, bundles, now) {
		return current
	}
	return candidate
}
