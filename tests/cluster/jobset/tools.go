//go:build tools

// Package jobset pins the JobSet manager the cluster tests build; it is never compiled itself.
package jobset

import (
	_ "sigs.k8s.io/jobset"
)
