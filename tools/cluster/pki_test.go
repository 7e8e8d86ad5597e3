package main

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestPKI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	s := DefaultSettings("192.0.2.2")
	if PKICurrent(dir, s) {
		t.Fatal("an empty directory is current")
	}
	if err := WritePKI(dir, s); err != nil {
		t.Fatal(err)
	}
	if !PKICurrent(dir, s) {
		t.Fatal("a fresh PKI is not current")
	}
	moved := s
	moved.HostIP = "198.51.100.7"
	if PKICurrent(dir, moved) {
		t.Fatal("a PKI for another host IP counts as current")
	}
	renamed := s
	renamed.NodeName = "other"
	if PKICurrent(dir, renamed) {
		t.Fatal("a PKI for another node name counts as current")
	}

	ca, err := readCert(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	api, _ := readCert(filepath.Join(dir, "apiserver.crt"))
	for _, name := range []string{"kubernetes.default.svc", "localhost"} {
		if _, err := api.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("apiserver certificate for %s: %v", name, err)
		}
	}
	for _, ip := range []string{"127.0.0.1", "192.0.2.2", "10.96.0.1"} {
		if !slices.ContainsFunc(api.IPAddresses, func(a net.IP) bool { return a.Equal(net.ParseIP(ip)) }) {
			t.Errorf("apiserver certificate lacks IP %s", ip)
		}
	}
	kubelet, _ := readCert(filepath.Join(dir, "kubelet.crt"))
	if kubelet.Subject.CommonName != "system:node:keelson-control-plane" || !slices.Equal(kubelet.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("kubelet identity %v: the Node authorizer needs system:node:<name> in system:nodes", kubelet.Subject)
	}
	if _, err := kubelet.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("kubelet client certificate: %v", err)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")); err != nil {
		t.Errorf("admin key pair: %v", err)
	}
	if info, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("ca.key must be private: %v %v", info.Mode(), err)
	}
}
