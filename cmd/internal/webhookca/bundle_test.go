package webhookca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/keelson-dev/keelson/cmd/internal/webhookca/webhookcatest"
)

func caPEM(t *testing.T, name string, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: notAfter.Add(-24 * time.Hour), NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestMergeBundleKeepsThePreviousCAWhileValid(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	current := caPEM(t, "current", now.Add(365*24*time.Hour))
	previous := caPEM(t, "previous", now.Add(60*24*time.Hour))
	expired := caPEM(t, "expired", now.Add(-time.Hour))
	older := caPEM(t, "older", now.Add(24*time.Hour))
	for name, tc := range map[string]struct {
		existing []byte
		want     []string
	}{
		"first injection":                  {nil, []string{"current"}},
		"steady":                           {current, []string{"current"}},
		"after a CA rotation":              {previous, []string{"current", "previous"}},
		"expired CAs are dropped":          {append(append([]byte{}, previous...), expired...), []string{"current", "previous"}},
		"bounded":                          {bytes.Join([][]byte{previous, older, caPEM(t, "third", now.Add(time.Hour))}, nil), []string{"current", "previous", "older"}},
		"garbage in the bundle is ignored": {[]byte("not a certificate"), []string{"current"}},
	} {
		got := webhookcatest.CANames(t, MergeBundle(current, tc.existing, now))
		if len(got) != len(tc.want) {
			t.Errorf("%s: bundle %v, want %v", name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: bundle %v, want %v", name, got, tc.want)
			}
		}
	}
	// Steady state: merging again changes nothing, so the injector writes nothing.
	once := MergeBundle(current, previous, now)
	if !bytes.Equal(once, MergeBundle(current, once, now)) {
		t.Fatal("merging a merged bundle changed it")
	}
}
