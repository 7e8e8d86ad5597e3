package modelfetch

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// transport is how a fetch speaks HTTP, to http(s) sources and S3 stores alike. It bounds what a source that does
// not answer can cost: the connection and the wait for the answer's headers, not the download (the fetch's own
// deadline bounds that). It trusts o.RootCAs (the system's roots when nil) and goes through o.Proxy (the
// environment's HTTP_PROXY, HTTPS_PROXY and NO_PROXY when nil).
func transport(o Options) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.ResponseHeaderTimeout = time.Minute
	// The bytes the source sends are what its digests and ETags are of: no transparent gzip decoding (a source that
	// stores a .tar.gz with Content-Encoding: gzip would otherwise be saved decoded, and its digest mismatch).
	t.DisableCompression = true
	if o.Proxy != nil {
		t.Proxy = o.Proxy
	}
	if o.RootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12}
	}
	return t
}

// EnvCABundle is the environment variable of the fetch that holds the cluster operators' PEM certificates (the
// CA of a TLS-inspecting proxy, of the organization's stores): trusted by every fetch, beside the public roots.
const EnvCABundle = "KEELSON_CA_BUNDLE"

// RootCAsWith is the system's roots (in the controller's image, the public roots it carries) and the PEM
// certificates of private certificate authorities: the operators' (operatorPEM) and a namespace's bundle (file).
// Either may be empty; nil when both are, so the transport keeps the system's roots. A bundle that holds no
// certificate is an error, not a bundle that adds nothing: whoever named it meant a CA to be trusted.
func RootCAsWith(operatorPEM, file string) (*x509.CertPool, error) {
	if operatorPEM == "" && file == "" {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if operatorPEM != "" && !pool.AppendCertsFromPEM([]byte(operatorPEM)) {
		return nil, fmt.Errorf("the operators' CA bundle (%s) holds no PEM certificate", EnvCABundle)
	}
	if file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("the CA bundle: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the CA bundle %s holds no PEM certificate", file)
		}
	}
	return pool, nil
}
