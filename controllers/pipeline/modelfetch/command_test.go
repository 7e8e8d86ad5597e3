package modelfetch

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The command writes its result as JSON where the controller reads it (the termination message), and links the
// step's model path to the model in the cache; a failure exits non-zero with the reason.
func TestCommand(t *testing.T) {
	srv, ts := newModelServer(t)
	srv.set("/m.onnx", []byte("onnx"))
	dir := t.TempDir()
	resultFile, link := filepath.Join(dir, "result"), filepath.Join(dir, "model")
	args := []string{"--uri", ts.URL + "/m.onnx", "--cache-dir", filepath.Join(dir, "cache"), "--cache-max-size", "1Gi",
		"--link", link, "--result-file", resultFile}
	var out bytes.Buffer
	for run := range 2 { // the second run is a restart of the pod: the link is replaced, the cache hit
		if code := Main(args, &out); code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, out.String())
		}
		var res Result
		b, err := os.ReadFile(resultFile)
		if err != nil || json.Unmarshal(b, &res) != nil || res.CacheHit != (run == 1) || res.Digest == "" {
			t.Fatalf("run %d: result %s, %v", run, b, err)
		}
		if got, err := os.ReadFile(filepath.Join(link, "m.onnx")); err != nil || string(got) != "onnx" {
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
