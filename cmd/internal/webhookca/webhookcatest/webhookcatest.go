// Package webhookcatest holds what the tests of the webhook certificates share: reading a CA bundle back.
package webhookcatest

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
)

// DNSNames are a webhook Service's names, as the chart gives them to the serving certificate.
var DNSNames = []string{"svc.ns.svc", "svc", "svc.ns", "svc.ns.svc.cluster.local"}

// CANames are the common names of a PEM bundle's certificates, in order; a certificate that does not parse fails t.
func CANames(t testing.TB, bundle []byte) []string {
	t.Helper()
	var out []string
	for {
		var b *pem.Block
		b, bundle = pem.Decode(bundle)
		if b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.Subject.CommonName)
	}
}
