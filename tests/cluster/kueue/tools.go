//go:build tools

// Package kueue pins the Kueue manager the cluster tests build; it is never compiled itself.
package kueue

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
