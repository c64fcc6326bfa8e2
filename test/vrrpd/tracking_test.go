package vrrpd_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
)

// The scenarios of issue 9 for track_interface, track_file and vrrp_sync_group, each run
// with vrrpd on h1 and then with keepalived 2.2.7 on h1 (the same keepalived.conf), vrrpd
// on h2 both times: the VIPs move the same way and h1's notify hooks and notify FIFO hear
// the same sequences. Each name's hook writes to its own log (the hooks of two instances
// run concurrently, so only each name's order is defined).

var vip4b = netip.MustParsePrefix("10.99.0.101/24")

// hookScript writes a generic notify hook that appends its arguments to DIR/<name>.log.
func hookScript(t *testing.T, dir string) string {
	return writeScript(t, dir, "notify.sh", `echo "$@" >> `+dir+`/"$2".log`+"\n")
}

// trackScenario is one h1 configuration (and h2's, at priority 100 without trackers).
type trackScenario struct {
	conf1, conf2 string
}

// addDummy gives h an interface trk0 to track, up: one end of a veth pair (the kernel
// may lack the dummy driver), whose other end is up too so that trk0 has carrier.
func addDummy(t *testing.T, h *netlab.Host) {
	ipIn(t, h, "link", "add", "trk0", "type", "veth", "peer", "name", "trk1")
	ipIn(t, h, "link", "set", "trk1", "up")
	ipIn(t, h, "link", "set", "trk0", "up")
}

// openFIFO opens a notify FIFO for reading once the daemon made it.
func openFIFO(t *testing.T, path string) int {
	t.Helper()
	var fd int
	vrrpdtest.WaitFor(t, 5*time.Second, "notify FIFO "+path, func() bool {
		var err error
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
		return err == nil
	})
	t.Cleanup(func() { syscall.Close(fd) })
	return fd
}

// fifoByName reads what the FIFO holds and groups its lines by the name they report.
// keepalived's MASTER_RX_LOWER_PRI lines are events, not states, and left out: vrrpd does
// not write them (notify_master_rx_lower_pri is unsupported).
func fifoByName(fd int) map[string][]string {
	buf := make([]byte, 16384)
	n, _ := syscall.Read(fd, buf)
	out := map[string][]string{}
	for _, l := range strings.Split(string(buf[:max(n, 0)]), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || f[2] == "MASTER_RX_LOWER_PRI" {
			continue
		}
		name := strings.Trim(f[1], `"`)
		out[name] = append(out[name], strings.Join([]string{f[0], name, f[2], f[3]}, "_"))
	}
	return out
}

// runTracking runs h1 as kind and h2 as vrrpd with the scenario, calls steps in turn
// (each moves the VIPs and says where they must end up), stops h1, then checks the hooks'
// logs and the FIFO against want (by name).
func runTracking(t *testing.T, kind daemonKind, conf func(dir, hook, fifo string, prio int, h1 bool) string,
	steps []func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix), want map[string][]string,
	check func(t *testing.T, step int, st metrics.Status)) {
	_, _, h1, h2 := newLab(t)
	if kind.name == "keepalived" {
		keepalivedBinary(t)
	}
	hosts := []*netlab.Host{h1, h2}
	addDummy(t, h1)
	dir, dir2 := t.TempDir(), t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	p1 := kind.start(t, h1, writeConf(t, "h1.conf", conf(dir, hookScript(t, dir), fifo, 150, true)))
	fd := openFIFO(t, fifo)
	for i, step := range steps {
		holder, vips := step(t, h1, h2)
		if i == 0 {
			// h2 starts once h1 is master: keepalived takes longer to start than vrrpd, and
			// h2 must not win an election h1 is not in yet.
			for _, v := range vips {
				vrrpdtest.WaitFor(t, 8*time.Second, "h1 holding "+v.String(), func() bool { return hasAddr(t, h1, v) })
			}
			startVrrpd(t, h2, writeConf(t, "h2.conf", conf(dir2, hookScript(t, dir2), "", 100, false)), "")
		}
		for _, v := range vips {
			waitSoleHolder(t, 8*time.Second, 300*time.Millisecond, v, holder, hosts...)
		}
		t.Logf("%s: step %d: %s holds %v", kind.name, i, holder.Name, vips)
		if kind.name == "vrrpd" {
			st, err := vrrpdtest.Status(h1)
			if err != nil {
				t.Fatal(err)
			}
			check(t, i, st)
		}
	}
	p1.MustStop(t)
	for name, lines := range want {
		waitLines(t, filepath.Join(dir, name+".log"), lines)
	}
	got := fifoByName(fd)
	for name, lines := range want {
		if !slices.Equal(got[name], lines) {
			t.Errorf("%s: notify FIFO for %s: %v, want %v", kind.name, name, got[name], lines)
		}
	}
}

func instanceLines(name string, states ...string) []string {
	var out []string
	for _, s := range states {
		out = append(out, "INSTANCE_"+name+"_"+s)
	}
	return out
}

// globals is global_defs with vrrp_version 3 and the notify FIFO (none when fifo is "").
func globals(fifo string) string {
	g := "global_defs {\n  vrrp_version 3\n"
	if fifo != "" {
		g += "  notify_fifo " + fifo + "\n"
	}
	return g + "}\n"
}

func setLink(state string) func(t *testing.T, h1, h2 *netlab.Host) {
	return func(t *testing.T, h1, h2 *netlab.Host) { ipIn(t, h1, "link", "set", "trk0", state) }
}

// TestTrackInterface: h1 tracks trk0 (weight 0); trk0 down puts h1 in FAULT and the VIP
// moves to h2, back up h1 takes it back.
func TestTrackInterface(t *testing.T) {
	conf := func(dir, hook, fifo string, prio int, h1 bool) string {
		extra := fmt.Sprintf("notify %q\n", hook)
		if h1 {
			extra += "track_interface {\n  trk0\n}\n"
		}
		return globals(fifo) + vrrpInstance("VI_1", 51, prio, "0.1", extra, vip4.String())
	}
	steps := []func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix){
		func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) {
			return h1, []netip.Prefix{vip4}
		},
		func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) {
			setLink("down")(t, h1, h2)
			return h2, []netip.Prefix{vip4}
		},
		func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) {
			setLink("up")(t, h1, h2)
			return h1, []netip.Prefix{vip4}
		},
	}
	want := map[string][]string{"VI_1": instanceLines("VI_1", "BACKUP_150", "MASTER_150", "FAULT_150", "BACKUP_150", "MASTER_150", "STOP_150")}
	check := func(t *testing.T, step int, st metrics.Status) {
		in := st.Instances[0]
		wantState, wantIf := "MASTER", "UP"
		if step == 1 {
			wantState, wantIf = "FAULT", "DOWN"
		}
		if in.State != wantState || len(in.Trackers) != 1 || in.Trackers[0].Name != "trk0" || in.Trackers[0].Status != wantIf {
			t.Errorf("step %d: status %s %+v, want %s with trk0 %s", step, in.State, in.Trackers, wantState, wantIf)
		}
	}
	for _, kind := range []daemonKind{vrrpdKind, keepalivedKind} {
		t.Run(kind.name, func(t *testing.T) { runTracking(t, kind, conf, steps, want, check) })
	}
}

// TestTrackFile: h1 tracks a file with weight -10; 6 in it lowers h1 to 90, below h2's
// 100, and the VIP moves; 0 brings it back.
func TestTrackFile(t *testing.T) {
	var file string
	conf := func(dir, hook, fifo string, prio int, h1 bool) string {
		extra := fmt.Sprintf("notify %q\n", hook)
		top := ""
		if h1 {
			file = filepath.Join(dir, "prio")
			if err := os.WriteFile(file, []byte("0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			top = "track_file prio {\n  file " + file + "\n  weight -10\n}\n"
			extra += "track_file {\n  prio\n}\n"
		}
		return globals(fifo) + top + vrrpInstance("VI_1", 51, prio, "0.1", extra, vip4.String())
	}
	write := func(v string) func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) {
		return func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) {
			// Written to a temporary file and renamed in, as tools update such files.
			tmp := file + ".new"
			if err := os.WriteFile(tmp, []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, file); err != nil {
				t.Fatal(err)
			}
			if v == "0" {
				return h1, []netip.Prefix{vip4}
			}
			return h2, []netip.Prefix{vip4}
		}
	}
	steps := []func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix){
		func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) {
			return h1, []netip.Prefix{vip4}
		},
		write("6"), write("0"),
	}
	want := map[string][]string{"VI_1": instanceLines("VI_1", "BACKUP_150", "MASTER_150", "BACKUP_90", "MASTER_150", "STOP_150")}
	check := func(t *testing.T, step int, st metrics.Status) {
		in := st.Instances[0]
		wantPrio, wantValue := 150, int64(0)
		if step == 1 {
			wantPrio, wantValue = 90, 6
		}
		if int(in.Priority) != wantPrio || len(in.Trackers) != 1 || in.Trackers[0].Value == nil || *in.Trackers[0].Value != wantValue {
			t.Errorf("step %d: priority %d trackers %+v, want %d with the file at %d", step, in.Priority, in.Trackers, wantPrio, wantValue)
		}
	}
	for _, kind := range []daemonKind{vrrpdKind, keepalivedKind} {
		t.Run(kind.name, func(t *testing.T) { runTracking(t, kind, conf, steps, want, check) })
	}
}

// TestSyncGroup: VI_1 and VI_2 in sync group G; only VI_1 tracks trk0. trk0 down puts
// both in FAULT and both VIPs move to h2; back up, both return. The group's hook hears
// GROUP lines with priority 0.
func TestSyncGroup(t *testing.T) {
	conf := func(dir, hook, fifo string, prio int, h1 bool) string {
		extra := fmt.Sprintf("notify %q\n", hook)
		track := ""
		if h1 {
			track = "track_interface {\n  trk0\n}\n"
		}
		group := fmt.Sprintf("vrrp_sync_group G {\n  group {\n    VI_1\n    VI_2\n  }\n  notify %q\n}\n", hook)
		return globals(fifo) + group + vrrpInstance("VI_1", 51, prio, "0.1", extra+track, vip4.String()) +
			vrrpInstance("VI_2", 52, prio, "0.1", extra, vip4b.String())
	}
	both := []netip.Prefix{vip4, vip4b}
	steps := []func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix){
		func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) { return h1, both },
		func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) {
			setLink("down")(t, h1, h2)
			return h2, both
		},
		func(t *testing.T, h1, h2 *netlab.Host) (*netlab.Host, []netip.Prefix) {
			setLink("up")(t, h1, h2)
			return h1, both
		},
	}
	seq := []string{"BACKUP_150", "MASTER_150", "FAULT_150", "BACKUP_150", "MASTER_150", "STOP_150"}
	want := map[string][]string{
		"VI_1": instanceLines("VI_1", seq...),
		"VI_2": instanceLines("VI_2", seq...),
		"G":    {"GROUP_G_BACKUP_0", "GROUP_G_MASTER_0", "GROUP_G_FAULT_0", "GROUP_G_BACKUP_0", "GROUP_G_MASTER_0", "GROUP_G_STOP_0"},
	}
	check := func(t *testing.T, step int, st metrics.Status) {
		want := "MASTER"
		if step == 1 {
			want = "FAULT"
		}
		if len(st.SyncGroups) != 1 || st.SyncGroups[0].State != want {
			t.Errorf("step %d: sync groups %+v, want G %s", step, st.SyncGroups, want)
		}
		for _, in := range st.Instances {
			if in.State != want || in.SyncGroup != "G" {
				t.Errorf("step %d: %s %s in %q, want %s in G", step, in.Name, in.State, in.SyncGroup, want)
			}
		}
	}
	for _, kind := range []daemonKind{vrrpdKind, keepalivedKind} {
		t.Run(kind.name, func(t *testing.T) { runTracking(t, kind, conf, steps, want, check) })
	}
}

// TestNoVIPInstance: a VRRPv2 instance without VIPs (a cloud setup whose notify_master
// moves a floating address) elects a master and fails over, between two vrrpd and between
// vrrpd and keepalived: each side's hooks hear the same sequence.
func TestNoVIPInstance(t *testing.T) {
	for _, peer := range []daemonKind{vrrpdKind, keepalivedKind} {
		t.Run("peer-"+peer.name, func(t *testing.T) {
			_, _, h1, h2 := newLab(t)
			if peer.name == "keepalived" {
				keepalivedBinary(t)
			}
			dir := t.TempDir()
			hook := hookScript(t, dir)
			conf := func(prio int, name string) string {
				return vrrpInstance(name, 51, prio, "1", fmt.Sprintf("notify %q\n", hook))
			}
			d1 := startVrrpd(t, h1, writeConf(t, "h1.conf", conf(150, "H1")), "")
			p2 := peer.start(t, h2, writeConf(t, "h2.conf", conf(100, "H2")))
			waitLines(t, filepath.Join(dir, "H1.log"), instanceLines("H1", "BACKUP_150", "MASTER_150"))
			// h2 stays backup: it hears h1's advertisements without addresses.
			time.Sleep(4 * time.Second)
			waitLines(t, filepath.Join(dir, "H2.log"), instanceLines("H2", "BACKUP_100"))
			if in := d1.instance(t, "H1"); in.State != "MASTER" || in.Counters["advert_rcvd"] != 0 && in.Counters["addr_list_err"] != 0 {
				t.Errorf("h1 %+v", in)
			}
			d1.MustStop(t)
			waitLines(t, filepath.Join(dir, "H1.log"), instanceLines("H1", "BACKUP_150", "MASTER_150", "STOP_150"))
			waitLines(t, filepath.Join(dir, "H2.log"), instanceLines("H2", "BACKUP_100", "MASTER_100"))
			p2.MustStop(t)
		})
	}
}
