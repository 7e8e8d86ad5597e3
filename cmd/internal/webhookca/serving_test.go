package webhookca

import (
	"bytes"
	"crypto/tls"
	"testing"
	"time"
)

func keyPair(t *testing.T, data map[string][]byte) *tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(data[SecretCert], data[SecretKey])
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestChooseServing(t *testing.T) {
	now := time.Now()
	oldData, newData := certData(t, now, now, testDNSNames...), certData(t, now, now, testDNSNames...)
	old, next := keyPair(t, oldData), keyPair(t, newData)
	oldCA, newCA := oldData[SecretCACert], newData[SecretCACert]
	both := bytes.Join([][]byte{newCA, oldCA}, nil)
	expiredData := certData(t, now.Add(-2*ServingValidity), now.Add(-2*ServingValidity), testDNSNames...)
	expired := keyPair(t, expiredData)
	for name, tc := range map[string]struct {
		current, candidate *tls.Certificate
		bundles            [][]byte
		want               *tls.Certificate
	}{
		"first certificate, every bundle trusts it":    {nil, old, [][]byte{oldCA, oldCA}, old},
		"first certificate, one bundle lacks its CA":   {nil, old, [][]byte{oldCA, nil}, nil},
		"new CA in no bundle yet":                      {old, next, [][]byte{oldCA, oldCA}, old},
		"new CA in one bundle of two":                  {old, next, [][]byte{both, oldCA}, old},
		"new CA in every bundle":                       {old, next, [][]byte{both, both}, next},
		"no webhook configuration: nothing to wait on": {old, next, nil, next},
		"no candidate in the Secret":                   {old, nil, [][]byte{both}, old},
		"an expired candidate is never served":         {old, expired, [][]byte{expiredData[SecretCACert]}, old},
		"a bundle wiped keeps the current one":         {old, old, [][]byte{nil}, old},
	} {
		if got := ChooseServing(tc.current, tc.candidate, tc.bundles, now); got != tc.want {
			t.Errorf("%s: chose %v, want %v", name, subject(got), subject(tc.want))
		}
	}
}

func subject(c *tls.Certificate) string {
	if c == nil {
		return "none"
	}
	return c.Leaf.Issuer.String() + " serial " + c.Leaf.SerialNumber.String()
}
