//go:build !vrrpd_nokube

package main

// Kubernetes mode: everything of vrrpd that links client-go and apimachinery. A build with
// the tag vrrpd_nokube leaves this file out for nokube.go, and with it those libraries,
// whose package initialisation alone costs a standalone vrrpd about 4 MiB of resident
// memory (issue 12).

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vrrp-operator/vrrp-operator/internal/conflict"
	"github.com/vrrp-operator/vrrp-operator/internal/daemon"
	"github.com/vrrp-operator/vrrp-operator/internal/groupsource"
)

// kubeMode is Kubernetes mode's configuration source, event recorder and mastership
// publisher.
type kubeMode struct {
	group      types.NamespacedName
	node       string
	api        *rest.Config
	events     *groupsource.EventRecorder
	mastership *groupsource.Mastership
}

// newKubeMode checks --group and finds the API server, before anything starts.
func newKubeMode(group, node string) (*kubeMode, error) {
	key, err := parseGroup(group)
	if err != nil {
		return nil, err
	}
	api, err := apiConfig()
	if err != nil {
		return nil, fmt.Errorf("Kubernetes API: %w", err)
	}
	return &kubeMode{group: key, node: node, api: api}, nil
}

// recordEvents makes entering and leaving MASTER, and second holders of their VIPs,
// Events on the Services, and entries of the group's KeepalivedMastership.
func (k *kubeMode) recordEvents(opts *daemon.Options, log *slog.Logger) error {
	events, err := groupsource.NewEventRecorder(k.api, k.node, log)
	if err != nil {
		return err
	}
	ms, err := groupsource.NewMastership(k.api, k.group, k.node, log)
	if err != nil {
		return err
	}
	k.events, k.mastership = events, ms
	opts.OnStateChange = func(c daemon.StateChange) {
		events.Observe(c.Instance, c.From, c.To, c.VRID, c.VIPs)
		ms.Observe(c.Instance, c.From, c.To, c.VIPs, c.At)
	}
	// A second holder of a VIP: a Warning Event on its Service, through the same right
	// (create Events in the Service's namespace) and the same queue.
	opts.OnConflict = func(c conflict.Change) { events.ObserveConflict(c.Instance, c.VRID, c.Addr, c.MAC, c.Start) }
	return nil
}

// start runs the event recorder and the mastership publisher and follows the group,
// until ctx ends.
func (k *kubeMode) start(ctx context.Context, d *daemon.Daemon, stateDir, passwordFile string, log *slog.Logger) {
	go k.events.Run(ctx)
	go k.mastership.Run(ctx)
	go followGroup(ctx, d, k.api, k.mastership, k.events, groupsource.Options{Group: k.group, Node: k.node, StateDir: stateDir, PasswordFile: passwordFile}, log)
}

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
// state directory and the password file; followGroup sets the rest. ms, when not nil,
// learns each new group's instances, and ev, when not nil, its shared routers' members.
// It returns when ctx ends.
func followGroup(ctx context.Context, d *daemon.Daemon, rc *rest.Config, ms *groupsource.Mastership, ev *groupsource.EventRecorder, opts groupsource.Options, log *slog.Logger) {
	group := opts.Group
	opts.Logger = log
	opts.OnChange = func(u groupsource.Update) {
		for _, w := range u.Warnings {
			log.Warn(w.Message, "at", w.Pos.String())
		}
		// Before the reload: an instance it removes because it left the group is
		// one whose mastership entry this node must drop itself.
		if ms != nil {
			ms.SetGroup(u.Group)
		}
		if ev != nil {
			ev.SetGroup(u.Group) // a shared router's failover has its members' Events
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
