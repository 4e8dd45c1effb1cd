//go:build tools

// Package tools names etcd's server command, so that go.mod and go.sum pin it.
package tools

import _ "go.etcd.io/etcd/server/v3"
