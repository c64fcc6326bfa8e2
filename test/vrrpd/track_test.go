package vrrpd_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// trackConf is one VRRPv3 instance at 100 ms tracking chk (weight -60) with a generic
// notify hook; extra goes into the vrrp_script block.
func trackConf(priority int, check, notify, extra string) string {
	script := ""
	track := ""
	if check != "" {
		script = fmt.Sprintf("vrrp_script chk {\n  script %q\n  interval 1\n  weight -60\n%s}\n", check, extra)
		track = "track_script {\n  chk\n}\n"
	}
	return "global_defs {\n  vrrp_version 3\n}\n" + script +
		vrrpInstance("VI_1", 51, priority, "0.1", track+fmt.Sprintf("notify %q\n", notify), vip4.String())
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

// waitLines waits until the notify log at path reads want exactly.
func waitLines(t *testing.T, path string, want []string) {
	t.Helper()
	vrrpdtest.WaitFor(t, 5*time.Second, fmt.Sprintf("notify log %v", want), func() bool {
		return slices.Equal(readLines(t, path), want)
	})
}

// TestTrackScriptMovesVIP: a failing track_script with a negative weight hands the VIP to
// the peer, passing again brings it back (preempt), and the notify hooks see exactly
// those transitions, with the effective priority, in order.
func TestTrackScriptMovesVIP(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	hosts := []*netlab.Host{h1, h2}
	dir := t.TempDir()
	flag := filepath.Join(dir, "healthy")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log1, log2 := filepath.Join(dir, "h1.log"), filepath.Join(dir, "h2.log")
	n1 := writeScript(t, dir, "n1.sh", `echo "$@" >> `+log1+"\n")
	n2 := writeScript(t, dir, "n2.sh", `echo "$@" >> `+log2+"\n")

	fifo := filepath.Join(dir, "fifo")
	conf1 := strings.Replace(trackConf(150, "/bin/test -e "+flag, n1, ""), "global_defs {\n", "global_defs {\n  notify_fifo "+fifo+"\n", 1)
	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", conf1), "")
	d2 := startVrrpd(t, h2, writeConf(t, "h2.conf", trackConf(100, "", n2, "")), "")
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	// vrrpd holds the FIFO open read-write, so the lines wait in it for this reader.
	rfd, err := syscall.Open(fifo, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("notify_fifo: %v", err)
	}
	defer syscall.Close(rfd)

	// The check fails: 150-60 = 90 < 100, h2 preempts.
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	in := d1.instance(t, "VI_1")
	if in.Priority != 90 || in.BasePriority != 150 || len(in.TrackScripts) != 1 || in.TrackScripts[0].Status != "FAILED" {
		t.Errorf("h1 status %+v, want effective priority 90 with chk FAILED", in)
	}
	if got := metric(d1.scrape(t), "keepalived_script_status", `name="chk"`); got != 0 {
		t.Errorf("keepalived_script_status{chk} = %v while failing", got)
	}

	// It passes again: back to 150, h1 preempts.
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	if got := metric(d1.scrape(t), "keepalived_script_status", `name="chk"`); got != 1 {
		t.Errorf("keepalived_script_status{chk} = %v while passing", got)
	}
	d1.MustStop(t)
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h2, hosts...)

	waitLines(t, log1, []string{
		"INSTANCE_VI_1_BACKUP_150", "INSTANCE_VI_1_MASTER_150", "INSTANCE_VI_1_BACKUP_90",
		"INSTANCE_VI_1_MASTER_150", "INSTANCE_VI_1_STOP_150",
	})
	waitLines(t, log2, []string{
		"INSTANCE_VI_1_BACKUP_100", "INSTANCE_VI_1_MASTER_100", "INSTANCE_VI_1_BACKUP_100",
		"INSTANCE_VI_1_MASTER_100",
	})
	d2.MustStop(t)
	buf := make([]byte, 4096)
	n, _ := syscall.Read(rfd, buf)
	want := "INSTANCE \"VI_1\" BACKUP 150\nINSTANCE \"VI_1\" MASTER 150\nINSTANCE \"VI_1\" BACKUP 90\n" +
		"INSTANCE \"VI_1\" MASTER 150\nINSTANCE \"VI_1\" STOP 150\n"
	if n < 0 || string(buf[:max(n, 0)]) != want {
		t.Errorf("notify_fifo read %q, want %q", buf[:max(n, 0)], want)
	}
}

// TestTrackScriptTimeout: a check that hangs past its timeout is killed with its children
// and counted failed (the VIP moves), while the master's advertisements stay on time.
func TestTrackScriptTimeout(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	hosts := []*netlab.Host{h1, h2}
	dir := t.TempDir()
	hang, pidFile := filepath.Join(dir, "hang"), filepath.Join(dir, "child.pid")
	chk := writeScript(t, dir, "chk.sh", fmt.Sprintf(`if [ -e %s ]; then
  sleep 60 &
  echo $! > %s
  wait
fi
exit 0
`, hang, pidFile))
	nop := writeScript(t, dir, "nop.sh", "exit 0\n")
	obs := observe(t, h2)
	defer obs.close()

	d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", trackConf(150, chk, nop, "  timeout 1\n")), "")
	startVrrpd(t, h2, writeConf(t, "h2.conf", trackConf(100, "", nop, "")), "")
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)

	if err := os.WriteFile(hang, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitSoleHolder(t, 6*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	moved := time.Since(start)

	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the check never started its child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	vrrpdtest.WaitFor(t, 2*time.Second, "the hung check's child killed", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat") // gone, or a zombie
		i := strings.LastIndexByte(string(b), ')')
		return err != nil || i > 0 && i+2 < len(b) && b[i+2] == 'Z'
	})
	samples := d1.scrape(t)
	if metric(samples, "vrrpd_script_timeouts_total", `name="chk"`) < 1 || metric(samples, "vrrpd_script_failures_total", `name="chk"`) < 1 {
		t.Errorf("timeouts %v failures %v, want both counted", metric(samples, "vrrpd_script_timeouts_total", `name="chk"`),
			metric(samples, "vrrpd_script_failures_total", `name="chk"`))
	}

	// h1's advertisements while the check hung (up to its handover) kept their 100 ms.
	obs.mu.Lock()
	var last time.Time
	var worst time.Duration
	n := 0
	for _, a := range obs.adverts {
		if a.src != h1.Addr4 || a.vrid != 51 || a.at.Before(start) || a.priority != 150 {
			continue
		}
		if !last.IsZero() && a.at.Sub(last) > worst {
			worst = a.at.Sub(last)
		}
		last = a.at
		n++
	}
	obs.mu.Unlock()
	t.Logf("VIP moved %v after the check started hanging; h1 sent %d adverts at 150 meanwhile, largest gap %v", moved, n, worst)
	if n < 5 || worst > 250*time.Millisecond {
		t.Errorf("h1 sent %d adverts at 150 while its check hung, largest gap %v: want ~every 100 ms", n, worst)
	}
	d1.MustStop(t)
}

// TestTrackScriptKeepalivedAgrees runs TestTrackScriptMovesVIP's scenario with keepalived
// itself tracking the script on h1 (the same keepalived.conf) and vrrpd as its peer: the
// VIP moves the same way and keepalived's notify sequence is the one vrrpd writes.
func TestTrackScriptKeepalivedAgrees(t *testing.T) {
	_, _, h1, h2 := newLab(t)
	keepalivedBinary(t)
	hosts := []*netlab.Host{h1, h2}
	dir := t.TempDir()
	flag := filepath.Join(dir, "healthy")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log1, log2 := filepath.Join(dir, "h1.log"), filepath.Join(dir, "h2.log")
	n1 := writeScript(t, dir, "n1.sh", `echo "$@" >> `+log1+"\n")
	n2 := writeScript(t, dir, "n2.sh", `echo "$@" >> `+log2+"\n")

	k1 := startKeepalived(t, h1, writeConf(t, "h1.conf", trackConf(150, "/bin/test -e "+flag, n1, "")))
	// h2 starts once keepalived is master: a vrrpd started at the same moment can time
	// out before keepalived's first advertisement and be master for one exchange, which
	// adds a MASTER/BACKUP pair to its notify log that the scenario is not about.
	waitSoleHolder(t, 8*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	startVrrpd(t, h2, writeConf(t, "h2.conf", trackConf(100, "", n2, "")), "")
	waitSoleHolder(t, 8*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h1, hosts...)
	k1.MustStop(t)
	waitSoleHolder(t, 5*time.Second, 300*time.Millisecond, vip4, h2, hosts...)
	waitLines(t, log1, []string{
		"INSTANCE_VI_1_BACKUP_150", "INSTANCE_VI_1_MASTER_150", "INSTANCE_VI_1_BACKUP_90",
		"INSTANCE_VI_1_MASTER_150", "INSTANCE_VI_1_STOP_150",
	})
	waitLines(t, log2, []string{
		"INSTANCE_VI_1_BACKUP_100", "INSTANCE_VI_1_MASTER_100", "INSTANCE_VI_1_BACKUP_100",
		"INSTANCE_VI_1_MASTER_100",
	})
}
