package modelfetch

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command writes its result as JSON where the controller reads it (the termination message), and links the
// step's model path to the model in the cache; a failure exits non-zero with the reason.
func TestCommand(t *testing.T) {
	srv, ts := newModelServer(t)
	srv.set("/m.onnx", []byte("onnx"))
	dir := t.TempDir()
	resultFile, links := filepath.Join(dir, "result"), filepath.Join(dir, "models")
	if err := os.Mkdir(links, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--uri", ts.URL + "/m.onnx", "--cache-dir", filepath.Join(dir, "cache"), "--cache-max-size", "1Gi",
		"--links-dir", links, "--result-file", resultFile}
	var out bytes.Buffer
	for run := range 2 { // the second run is a restart of the pod: the links are made again, the cache hit
		if code := Main(args, &out); code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, out.String())
		}
		var res Result
		b, err := os.ReadFile(resultFile)
		if err != nil || json.Unmarshal(b, &res) != nil || res.CacheHit != (run == 1) || res.Digest == "" {
			t.Fatalf("run %d: result %s, %v", run, b, err)
		}
		if got, err := os.ReadFile(filepath.Join(links, "m.onnx")); err != nil || string(got) != "onnx" {
			t.Fatalf("run %d: through the link: %q, %v", run, got, err)
		}
	}
	args[1] = ts.URL + "/missing.onnx"
	if code := Main(args, &out); code != 1 {
		t.Fatalf("a missing model exited %d", code)
	}
	var res Result
	b, _ := os.ReadFile(resultFile)
	if json.Unmarshal(b, &res) != nil || res.Reason != ReasonNotFound {
		t.Fatalf("a missing model's result: %s", b)
	}
	if code := Main([]string{"--uri", "x"}, &out); code != 2 {
		t.Fatalf("without --cache-dir: exit %d", code)
	}
}

// The S3 settings come from the mounted Secret's files, the flags winning; keys come in pairs.
func TestS3Config(t *testing.T) {
	dir := t.TempDir()
	for key, v := range map[string]string{S3EndpointKey: "minio.models:9000\n", S3InsecureKey: "true", S3AccessKeyKey: "ak", S3SecretKeyKey: "sk"} {
		if err := os.WriteFile(filepath.Join(dir, key), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s3Config("", "eu-west-1", false, dir)
	if err != nil || c.Endpoint != "minio.models:9000" || c.Region != "eu-west-1" || !c.Insecure || c.AccessKey != "ak" || c.SecretKey != "sk" {
		t.Fatalf("s3Config = %+v, %v", c, err)
	}
	if c, err := s3Config("s3.example:443", "", false, dir); err != nil || c.Endpoint != "s3.example:443" {
		t.Fatalf("the flag does not win: %+v, %v", c, err)
	}
	if err := os.Remove(filepath.Join(dir, S3SecretKeyKey)); err != nil {
		t.Fatal(err)
	}
	if _, err := s3Config("", "", false, dir); err == nil {
		t.Fatal("an access key without its secret key was taken")
	}
}

// The result fits the 4096 bytes of a termination message whatever its message and URI, and stays JSON.
func TestFitResult(t *testing.T) {
	long := Result{URI: "https://h/" + strings.Repeat("&", 3000), Reason: ReasonNotFound, Message: strings.Repeat("é\"", 5000)}
	b := fitResult(long)
	var back Result
	if len(b) > maxMessage || json.Unmarshal(b, &back) != nil || back.Reason != ReasonNotFound || back.URI == "" {
		t.Fatalf("%d bytes: %.200s", len(b), b)
	}
	short := Result{URI: "https://h/m", Digest: "sha256:ab"}
	if got := fitResult(short); !strings.Contains(string(got), `"digest":"sha256:ab"`) {
		t.Fatalf("a short result was changed: %s", got)
	}
}
