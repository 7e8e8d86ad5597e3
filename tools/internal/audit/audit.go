// Package audit reads the local cluster's apiserver audit log: the write requests each user completed, for the
// benchmarks (writes per unit of work) and the reliability suite (writes repeated after a fault).
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditEvent is the part of an audit.k8s.io/v1 Event read here.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// writeVerbs are the verbs that change state.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// Writes counts write requests by user, then by "verb resource[/subresource]", for requests completed in [from, to).
type Writes map[string]map[string]int

// Total returns a user's writes of every kind.
func (w Writes) Total(user string) int {
	n := 0
	for _, c := range w[user] {
		n += c
	}
	return n
}

// WriteEvent is one completed write request.
type WriteEvent struct {
	// At is when it completed.
	At time.Time
	// User made it.
	User string
	// Key is "verb resource[/subresource]".
	Key string
	// Code is the HTTP status the apiserver answered (409: a conflict, or an object already there).
	Code int
}

// ReadWrites reads an apiserver audit log (one JSON event per line) and returns its completed write requests.
// Requests the apiserver refused count too: they cost it the same work.
func ReadWrites(r io.Reader) ([]WriteEvent, error) {
	var out []WriteEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line cut by log rotation
		}
		if e.Stage != "ResponseComplete" || !writeVerbs[e.Verb] || e.ObjectRef == nil {
			continue
		}
		key := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			key += "/" + e.ObjectRef.Subresource
		}
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		out = append(out, WriteEvent{At: e.StageTimestamp, User: e.User.Username, Key: key, Code: code})
	}
	return out, sc.Err()
}

// Count counts the events in [from, to) by user and key.
func Count(events []WriteEvent, from, to time.Time) Writes {
	out := Writes{}
	for _, e := range events {
		if e.At.Before(from) || !e.At.Before(to) {
			continue
		}
		if out[e.User] == nil {
			out[e.User] = map[string]int{}
		}
		out[e.User][e.Key]++
	}
	return out
}

// CountWrites reads an audit log and counts the writes each user completed in [from, to).
func CountWrites(r io.Reader, from, to time.Time) (Writes, error) {
	events, err := ReadWrites(r)
	return Count(events, from, to), err
}

// ReadWritesSince reads the audit log at path and the older files the apiserver rotated it into
// (<name>-<timestamp><ext> beside it), and returns the writes completed from since on. It fails if the oldest
// file kept begins after since: rotation has then dropped part of the run, and counts would be silently low.
func ReadWritesSince(path string, since time.Time) ([]WriteEvent, error) {
	ext := filepath.Ext(path)
	rotated, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, err
	}
	var events []WriteEvent
	oldest := time.Time{}
	for _, p := range append(rotated, path) {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("the audit log (the local cluster writes it): %w", err)
		}
		es, err := ReadWrites(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, e := range es {
			if oldest.IsZero() || e.At.Before(oldest) {
				oldest = e.At
			}
			if !e.At.Before(since) {
				events = append(events, e)
			}
		}
	}
	if oldest.IsZero() || oldest.After(since) {
		return nil, fmt.Errorf("the audit log kept at %s begins at %s, after this run began (%s): rotation dropped "+
			"part of the run; keep more rotated files (the local cluster keeps %s)", path,
			oldest.Format(time.RFC3339), since.Format(time.RFC3339), "--audit-log-maxbackup")
	}
	return events, nil
}
