//go:build vrrpd_nokube

package main

// A vrrpd built with the tag vrrpd_nokube runs configuration files only: it links neither
// client-go nor apimachinery, which keeps about 4 MiB out of its resident set (issue 12).
// --group and --node are refused with a clear error.

import (
	"context"
	"errors"
	"log/slog"

	"github.com/vrrp-operator/vrrp-operator/internal/daemon"
)

// kubeMode is never made in this build.
type kubeMode struct{}

func newKubeMode(group, node string) (*kubeMode, error) {
	return nil, errors.New("this vrrpd was built without Kubernetes mode (tag vrrpd_nokube); run it with --config")
}

func (*kubeMode) recordEvents(*daemon.Options, *slog.Logger) error { return nil }

func (*kubeMode) start(context.Context, *daemon.Daemon, string, string, *slog.Logger) {}
