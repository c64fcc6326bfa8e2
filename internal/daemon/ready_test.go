package daemon

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
)

// TestReady runs the real loop as Kubernetes mode does (a placeholder configuration,
// then the group's): Ready fails until the group is applied, while an instance cannot open
// its socket, and passes once every instance has left INIT.
func TestReady(t *testing.T) {
	h := newFakeHost()
	h.openErr["eth1"] = syscall.EPERM
	d, err := New(Options{
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		AwaitConfig: true,
		vips:        h, garp: fakeAnnouncers{h}, open: h.open, links: fakeLinks{h}, routes: fakeRoutes{h},
		conflicts:    &h.conflicts,
		pollInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ready := d.Ready()
	if err := ready(); err == nil {
		t.Fatal("ready before Run")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, &config.Config{}) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	}()
	waitFor := func(what string, cond func(error) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for err := ready(); !cond(err); err = ready() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: Ready() = %v", what, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("the placeholder to be running, not ready", func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "not loaded")
	})

	// The group arrives with an instance whose socket is refused.
	ok := testInstance("VI_OK", 1, 100, "10.99.0.100/24")
	perm := testInstance("VI_PERM", 2, 100, "10.99.1.100/24")
	perm.Interface = "eth1"
	perm.VIPs[0].Dev = "eth1"
	if err := d.Reload(ctx, &config.Config{Instances: []config.Instance{ok, perm}}); err != nil {
		t.Fatal(err)
	}
	waitFor("VI_PERM named", func(err error) bool { return err != nil && strings.Contains(err.Error(), "VI_PERM") })

	// Without it, ready once VI_OK has left INIT.
	if err := d.Reload(ctx, &config.Config{Instances: []config.Instance{ok}}); err != nil {
		t.Fatal(err)
	}
	waitFor("ready", func(err error) bool { return err == nil })
	for _, in := range d.Snapshot().Instances {
		if in.State.String() == "INIT" {
			t.Errorf("ready with %s in INIT", in.Name)
		}
	}
}

// Without AwaitConfig the configuration Run starts with is the real one: ready once its
// instance left INIT, with no Reload.
func TestReadyStandalone(t *testing.T) {
	h := newFakeHost()
	d, err := New(Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		vips:   h, garp: fakeAnnouncers{h}, open: h.open, links: fakeLinks{h}, routes: fakeRoutes{h},
		conflicts:    &h.conflicts,
		pollInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- d.Run(ctx, &config.Config{Instances: []config.Instance{testInstance("VI_1", 1, 100, "10.99.0.100/24")}})
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for err := d.Ready()(); err != nil; err = d.Ready()() {
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
