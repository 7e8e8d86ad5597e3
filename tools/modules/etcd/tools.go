//go:build tools

// Package tools pins the etcd server Keelson builds from source when it cannot be downloaded.
package tools

import _ "go.etcd.io/etcd/server/v3"
