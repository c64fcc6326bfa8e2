package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vrrp-operator/vrrp-operator/internal/daemon"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
)

// parseGroup reads --group namespace/name.
func parseGroup(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--group %q: want namespace/name", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// apiConfig finds the API server as kubectl does: KUBECONFIG (or ~/.kube/config), else
// the in-cluster service account.
func apiConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// followGroup is Kubernetes mode's configuration source: it follows the node's
// KeepalivedGroup (the operator computes everything into its status) and reloads the
// daemon whenever this node's share of it changes. While the API server is away it serves
// the group last seen, cached in the state directory. opts names the group, the node, the
// state directory and the password file; followGroup sets the rest. It returns when ctx
// ends.
func followGroup(ctx context.Context, d *daemon.Daemon, rc *rest.Config, opts groupsource.Options, log *slog.Logger) {
	group := opts.Group
	opts.Logger = log
	opts.OnChange = func(u groupsource.Update) {
		for _, w := range u.Warnings {
			log.Warn(w.Message, "at", w.Pos.String())
		}
		log.Info("group changed", "group", group.String(), "instances", len(u.Config.Instances),
			"from_cache", u.FromCache, "resource_version", u.ResourceVersion)
		start := time.Now()
		if err := d.Reload(ctx, u.Config); err != nil && ctx.Err() == nil {
			log.Error("group configuration refused, keeping the running one", "err", err)
		}
		// Where a change's time went, for the Service-to-VIP breakdown
		// (test/e2e reads it): the event's arrival and the applied reload
		// at full precision, the cache write, translation and reload
		// durations.
		if !u.Timing.Received.IsZero() {
			log.Debug("group applied", "resource_version", u.ResourceVersion, "instances", len(u.Config.Instances),
				"received", u.Timing.Received.Format(time.RFC3339Nano), "applied", time.Now().Format(time.RFC3339Nano),
				"cache_us", u.Timing.Cache.Microseconds(), "translate_us", u.Timing.Translate.Microseconds(),
				"reload_us", time.Since(start).Microseconds())
		}
	}
	err := groupsource.Watch(ctx, rc, opts)
	if err != nil && ctx.Err() == nil {
		log.Error("following the group stopped", "group", group.String(), "err", err)
	}
}
