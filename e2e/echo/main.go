// Command echo is the workload of Keelson's end-to-end suites and of `make dev`'s samples: an HTTP server that
// answers every path with the pod's name and the request, so a suite can tell which pod a Service reached.
//
// With --cat=FILE it prints FILE (NUL bytes as spaces) and exits instead: run as an ephemeral debug container that
// shares a controller's process namespace, `--cat=/proc/1/cmdline` shows what runs as PID 1 in a scratch image.
//
// It also serves models for the suites of pipelines whose models are fetched into a node's cache: GET
// /models/<name>?size=N answers N bytes (1 MiB by default) that depend only on the name and size, with an ETag, and
// 304 to a request that already holds it; /models-served counts the models it sent in full. /model-files reads every
// file of the model at $MODEL_PATH, following links, and lists them with their sizes.
//
// It listens on --listenPort or --port (a pipeline step's arguments), else $PORT, else 8080, and ignores every
// other flag, since a pipeline step passes its model arguments along.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// modelServer serves generated models and counts those it sent in full.
type modelServer struct{ served atomic.Int64 }

func (m *modelServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/models/")
	size := int64(1 << 20)
	if v := r.URL.Query().Get("size"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "size must be a count of bytes", http.StatusBadRequest)
			return
		}
		size = n
	}
	sum := sha256.Sum256([]byte(name + "\x00" + strconv.FormatInt(size, 10)))
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.CopyN(w, pattern(sum[:]), size); err == nil {
		m.served.Add(1)
	}
}

// modelFiles reads every file of the model at dir, through the links a model cache leaves there, as this process's
// user: a line "<path below dir> <bytes read>" each.
func modelFiles(dir string) (string, error) {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Stat(p) // follows a link
		if err != nil {
			return err
		}
		if info.IsDir() {
			if p != dir && d.Type()&fs.ModeSymlink != 0 {
				target, err := filepath.EvalSymlinks(p) // WalkDir does not follow links: walk where it points
				if err != nil {
					return err
				}
				sub, err := modelFiles(target)
				b.WriteString(prefixLines(sub, d.Name()+"/"))
				return err
			}
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, f)
		_ = f.Close()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %d\n", rel, n)
		return nil
	})
	return b.String(), err
}

// prefixLines puts prefix before every line of s.
func prefixLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// pattern is an endless reader of its bytes, repeated.
type pattern []byte

func (p pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = p[i%len(p)]
	}
	return len(b), nil
}

// port picks the listen port from the arguments, then the environment.
func port(args []string, env func(string) string) string {
	for _, a := range args {
		for _, flag := range []string{"--listenPort=", "--port="} {
			if v, ok := strings.CutPrefix(a, flag); ok && v != "" {
				return v
			}
		}
	}
	if p := env("PORT"); p != "" {
		return p
	}
	return "8080"
}

// catFile returns a file's content with NUL separators (of /proc/*/cmdline) turned into spaces.
func catFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")), err
}

func main() {
	for _, a := range os.Args[1:] {
		if path, ok := strings.CutPrefix(a, "--cat="); ok {
			out, err := catFile(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println(out)
			return
		}
	}
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/model-files", func(w http.ResponseWriter, _ *http.Request) {
		out, err := modelFiles(os.Getenv("MODEL_PATH"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = fmt.Fprint(w, out)
	})
	models := &modelServer{}
	mux.Handle("/models/", models)
	mux.HandleFunc("/models-served", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, models.served.Load()) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "pod=%s path=%s next=%s model=%s\n", host, r.URL.Path, os.Getenv("NEXT_STEP_URLS"), os.Getenv("MODEL_PATH"))
	})
	srv := &http.Server{Addr: ":" + port(os.Args[1:], os.Getenv), Handler: mux}
	// PID 1 gets no default signal handling: exit on SIGTERM so a pod stops at once.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; _ = srv.Close() }()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
