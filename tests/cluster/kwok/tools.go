//go:build tools

// Package kwok pins the kwok command the cluster tests build; it is never compiled itself.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
