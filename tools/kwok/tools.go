//go:build tools

// Package tools names the KWOK command this module builds, so that go.mod and
// go.sum pin every module it needs.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
