package vrrpd_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// With --realtime-priority, vrrpd's threads run in SCHED_RR but its check scripts and
// notify hooks run in SCHED_OTHER, as keepalived resets its scripts' priorities: a script
// that inherited the real-time policy and looped would take a CPU from the node. Each
// script writes the scheduling policy of its shell (field 41 of /proc/PID/stat: 0 is
// SCHED_OTHER, 2 SCHED_RR).
func TestRealtimeScriptsRunDefaultScheduling(t *testing.T) {
	lab := netlabtest.New(t, "h1")
	h1 := lab.Host("h1")
	dir := t.TempDir()
	// record writes a script that records its shell's policy in dir/name.
	record := func(name string) string {
		path := filepath.Join(dir, name+".sh")
		body := fmt.Sprintf("#!/bin/sh\ncut -d' ' -f41 /proc/$$/stat > %s\n", filepath.Join(dir, name))
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	conf := "global_defs {\n  vrrp_version 3\n}\n" +
		"vrrp_script chk {\n  script " + record("script") + "\n  interval 1\n}\n" +
		vrrpInstance("VI_1", 51, 150, "0.1", "track_script {\n  chk\n}\nnotify_master "+record("hook")+"\n", vip4.String())
	v := startVrrpd(t, h1, writeConf(t, "h1.conf", conf), "", "--realtime-priority", "10")
	// Every thread of vrrpd but the one that starts the scripts is real-time.
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", v.Pid()))
	if err != nil || len(tasks) < 2 {
		t.Fatalf("vrrpd's threads: %v %v", tasks, err)
	}
	normal := 0
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Fields(s[strings.LastIndexByte(s, ')')+2:])[38] != "2" {
			normal++
		}
	}
	if normal > 1 {
		t.Fatalf("%d of vrrpd's %d threads are not SCHED_RR, want 1 at most (the scripts' own)", normal, len(tasks))
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, name := range []string{"script", "hook"} {
		for {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil && len(b) > 0 {
				if got := strings.TrimSpace(string(b)); got != "0" {
					t.Errorf("the %s ran with scheduling policy %s, want 0 (SCHED_OTHER)", name, got)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the %s never ran; vrrpd log:\n%s", name, v.Output())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
