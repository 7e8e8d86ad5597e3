package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RSS returns the resident set size in bytes of every host process whose command starts with /<binary> (the
// controllers run as containers on the local cluster's real node, so they are host processes).
func RSS(binary string) ([]int64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(cl), "/"+binary+"\x00") {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		if kb := ParseVMRSS(string(status)); kb > 0 {
			out = append(out, kb*1024)
		}
	}
	return out, nil
}

// ParseVMRSS returns the VmRSS line of /proc/<pid>/status in kB, or 0.
func ParseVMRSS(status string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
