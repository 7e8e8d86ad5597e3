// Command echo is the workload of Keelson's end-to-end suites and of `make dev`'s samples: an HTTP server that
// answers every path with the pod's name and the request, so a suite can tell which pod a Service reached.
//
// With --cat=FILE it prints FILE (NUL bytes as spaces) and exits instead: run as an ephemeral debug container that
// shares a controller's process namespace, `--cat=/proc/1/cmdline` shows what runs as PID 1 in a scratch image.
//
// It listens on --listenPort or --port (a pipeline step's arguments), else $PORT, else 8080, and ignores every
// other flag, since a pipeline step passes its model arguments along.
package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

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
