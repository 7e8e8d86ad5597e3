package modelfetch

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	pin := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		raw, uri, digest, host, path, err string
	}{
		{raw: "https://models.example/v1/resnet.tar.gz", uri: "https://models.example/v1/resnet.tar.gz", host: "models.example", path: "/v1/resnet.tar.gz"},
		{raw: "http://10.0.0.1:8080/m.onnx#sha256=" + strings.ToUpper(pin), uri: "http://10.0.0.1:8080/m.onnx", digest: "sha256:" + pin, host: "10.0.0.1:8080", path: "/m.onnx"},
		{raw: "s3://bucket/models/resnet", uri: "s3://bucket/models/resnet", host: "bucket", path: "models/resnet"},
		{raw: "s3://bucket", uri: "s3://bucket", host: "bucket", path: ""},
		{raw: "models/resnet", err: "no scheme"},
		{raw: "file:///etc/passwd", err: "unsupported scheme"},
		{raw: "https:///m.onnx", err: "without a host"},
		{raw: "https://user:secret@models.example/m.onnx", err: "credentials"},
		{raw: "https://models.example/models/", err: "not a directory"},
		{raw: "https://models.example", err: "not a directory"},
		{raw: "s3:///prefix", err: "without a bucket"},
		{raw: "s3://bucket/p?versionId=1", err: "no query"},
		{raw: "https://models.example/m.onnx#md5=abc", err: "#sha256="},
		{raw: "https://bucket.s3.amazonaws.com/m.onnx?X-Amz-Signature=abc&X-Amz-Credential=x", err: "presigned"},
		{raw: "https://storage.example/m.onnx?sig=abc", err: "presigned"},
		{raw: "https://models.example/m.onnx?version=2", uri: "https://models.example/m.onnx?version=2", host: "models.example", path: "/m.onnx"},
		{raw: "https://models.example/m.onnx#sha256=abc", err: "#sha256="},
	} {
		s, err := Parse(tc.raw)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %+v, %v; want an error saying %q", tc.raw, s, err, tc.err)
			}
			continue
		}
		if err != nil || s.URI != tc.uri || s.Digest != tc.digest || s.Host != tc.host || s.Path != tc.path {
			t.Errorf("Parse(%q) = %+v, %v", tc.raw, s, err)
		}
	}
}

// A downloaded file is stored under the last segment of its path, never under a name that is a path itself.
func TestSourceName(t *testing.T) {
	for escapedPath, want := range map[string]string{
		"/a/model.onnx":           "model.onnx",
		"/a/my%20model.bin":       "my model.bin",
		"/a/..%2F..%2Fetc%2Fcron": "..%2F..%2Fetc%2Fcron",
		"/a/..":                   "model",
	} {
		if got := (Source{Path: escapedPath}).name(); got != want {
			t.Errorf("name of %s = %q, want %q", escapedPath, got, want)
		}
	}
}
