package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCountWrites(t *testing.T) {
	at := func(s string) time.Time { ts, _ := time.Parse(time.RFC3339, s); return ts }
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:01Z"}`,
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:02Z"}`,
		`{"stage":"ResponseComplete","verb":"update","user":{"username":"ds"},"objectRef":{"resource":"daemonsets","subresource":"status"},"stageTimestamp":"2026-01-01T00:00:03Z"}`,
		`{"stage":"ResponseStarted","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:03Z"}`,
		`{"stage":"ResponseComplete","verb":"get","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:03Z"}`,
		`{"stage":"ResponseComplete","verb":"patch","user":{"username":"kubelet"},"objectRef":{"resource":"pods","subresource":"status"},"stageTimestamp":"2026-01-01T00:00:04Z"}`,
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:09Z"}`,
		`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"responseStatus":{"code":409},"stageTimestamp":"2026-01-01T00:00:04Z"}`,
		`not json`,
	}, "\n")
	got, err := CountWrites(strings.NewReader(log), at("2026-01-01T00:00:00Z"), at("2026-01-01T00:00:05Z"))
	if err != nil {
		t.Fatal(err)
	}
	// A refused write counts (it cost the apiserver the same work) and keeps its status code.
	want := Writes{"ds": {"create pods": 3, "update daemonsets/status": 1}, "kubelet": {"patch pods/status": 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("writes (-want +got):\n%s", diff)
	}
	if got.Total("ds") != 4 || got.Total("nobody") != 0 {
		t.Fatalf("totals %d %d", got.Total("ds"), got.Total("nobody"))
	}
}

func TestReadWritesKeepsTheStatusCode(t *testing.T) {
	events, err := ReadWrites(strings.NewReader(`{"stage":"ResponseComplete","verb":"update","user":{"username":"u"},` +
		`"objectRef":{"resource":"pods"},"responseStatus":{"code":409},"stageTimestamp":"2026-01-01T00:00:04Z"}`))
	if err != nil || len(events) != 1 || events[0].Code != 409 {
		t.Fatalf("events %+v, err %v: want one write answered 409", events, err)
	}
}

// A run that spans a rotation is read from the rotated file too; a run whose beginning was rotated away fails.
func TestReadWritesSinceFollowsRotation(t *testing.T) {
	line := func(sec int) string {
		return fmt.Sprintf(`{"stage":"ResponseComplete","verb":"create","user":{"username":"ds"},"objectRef":{"resource":"pods"},"stageTimestamp":"2026-01-01T00:00:%02dZ"}`+"\n", sec)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(filepath.Join(dir, "audit-2026-01-01T00-00-05.000.log"), []byte(line(1)+line(3)+line(4)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(line(6)+line(8)), 0o600); err != nil {
		t.Fatal(err)
	}
	at := func(sec int) time.Time { return time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC) }
	events, err := ReadWritesSince(path, at(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("%d events from 00:03 on across both files, want 4", len(events))
	}
	if err := os.Remove(filepath.Join(dir, "audit-2026-01-01T00-00-05.000.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWritesSince(path, at(3)); err == nil || !strings.Contains(err.Error(), "rotation dropped") {
		t.Fatalf("a run whose beginning was rotated away: %v", err)
	}
}
