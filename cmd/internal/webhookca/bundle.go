package webhookca

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"time"
)

// maxBundleCAs bounds the CA bundle: the current CA and the ones before it that are still valid.
const maxBundleCAs = 3

// MergeBundle returns the CA bundle to inject: the current CA first, then each certificate of the existing bundle
// that is still valid at now and is not the current one. Keeping the previous CA while it is valid is the overlap
// that makes a CA rotation safe: a replica still serving a certificate the previous CA signed (it has not seen the
// new Secret yet, or waits for another bundle to trust the new CA) stays trusted.
func MergeBundle(current, existing []byte, now time.Time) []byte {
	out := bytes.TrimSpace(current)
	out = append(out, '\n')
	kept := 1
	rest := existing
	for kept < maxBundleCAs {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil || now.After(cert.NotAfter) || bytes.Contains(current, pem.EncodeToMemory(block)) {
			continue
		}
		out = append(out, pem.EncodeToMemory(block)...)
		kept++
	}
	return out
}

// TrustedByAll reports whether every bundle holds a CA that makes leaf a valid serving certificate at now. No
// bundles trust anything vacuously: with no webhook configuration, no caller is failed by the choice.
func TrustedByAll(leaf *x509.Certificate, bundles [][]byte, now time.Time) bool {
	for _, b := range bundles {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(b) {
			return false
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return false
		}
	}
	return true
}
