//go:build tools

// Package helm pins the helm command the chart's tests build; it is never compiled itself.
package helm

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
