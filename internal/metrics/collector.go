package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Label sets. vrrpLabels are keepalived_exporter's, in its order.
var (
	vrrpLabels     = []string{"name", "intf", "vrid", "state"}
	instanceLabels = []string{"name", "intf", "vrid"}
	vipLabels      = []string{"name", "intf", "vrid", "vip"}
	socketLabels   = []string{"intf", "family"}
	trackerLabels  = []string{"name", "intf", "vrid", "kind", "tracked"}
	conflictLabels = []string{"name", "intf", "vrid", "vip", "mac"}
)

// counterDef is one per-instance counter: its metric name, help, and where its value is.
type counterDef struct {
	name, help string
	value      func(*vrrp.Counters) uint64
}

// keepalivedCounters are keepalived_exporter 0.5.0's per-instance counters, same names and
// help texts, so that recording rules written against it match. Each is labelled
// vrrpLabels, the instance's current state included, as the exporter labels them.
var keepalivedCounters = []counterDef{
	{"keepalived_vrrp_advert_rcvd", "Advertisements received", func(c *vrrp.Counters) uint64 { return c.AdvertRcvd }},
	{"keepalived_vrrp_advert_sent", "Advertisements sent", func(c *vrrp.Counters) uint64 { return c.AdvertSent }},
	{"keepalived_vrrp_become_master", "Became master", func(c *vrrp.Counters) uint64 { return c.BecomeMaster }},
	{"keepalived_vrrp_release_master", "Released master", func(c *vrrp.Counters) uint64 { return c.ReleaseMaster }},
	{"keepalived_vrrp_packet_len_err", "Packet length errors", func(c *vrrp.Counters) uint64 { return c.PacketLenErr }},
	{"keepalived_vrrp_advert_interval_err", "Advertisement interval errors", func(c *vrrp.Counters) uint64 { return c.AdvertIntervalErr }},
	{"keepalived_vrrp_ip_ttl_err", "TTL errors", func(c *vrrp.Counters) uint64 { return c.IPTTLErr }},
	{"keepalived_vrrp_invalid_type_rcvd", "Invalid type errors", func(c *vrrp.Counters) uint64 { return c.InvalidTypeRcvd }},
	{"keepalived_vrrp_addr_list_err", "Address list errors", func(c *vrrp.Counters) uint64 { return c.AddrListErr }},
	{"keepalived_vrrp_invalid_authtype", "Authentication invalid", func(c *vrrp.Counters) uint64 { return c.InvalidAuthType }},
	{"keepalived_vrrp_authtype_mismatch", "Authentication mismatch", func(c *vrrp.Counters) uint64 { return c.AuthTypeMismatch }},
	{"keepalived_vrrp_auth_failure", "Authentication failure", func(c *vrrp.Counters) uint64 { return c.AuthFailure }},
	{"keepalived_vrrp_pri_zero_rcvd", "Priority zero received", func(c *vrrp.Counters) uint64 { return c.PriZeroRcvd }},
	{"keepalived_vrrp_pri_zero_sent", "Priority zero sent", func(c *vrrp.Counters) uint64 { return c.PriZeroSent }},
	// vrrpd's own error counters, labelled the same way so they sit beside keepalived's.
	{"vrrpd_checksum_err", "Advertisements dropped for a bad VRRP checksum", func(c *vrrp.Counters) uint64 { return c.ChecksumErr }},
	{"vrrpd_version_err", "Advertisements dropped for a VRRP version other than the instance's", func(c *vrrp.Counters) uint64 { return c.VersionErr }},
}

// instanceDef is one family with a series per instance, labelled instanceLabels.
type instanceDef struct {
	name, help string
	typ        prometheus.ValueType
	value      func(*Instance) float64
}

var (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

// instanceFamilies are the per-instance families without a state label. To add one, add
// a line here; the collector describes and collects it.
var instanceFamilies = []instanceDef{
	{"keepalived_vrrp_state", "State of the VRRP instance: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT", gauge,
		func(in *Instance) float64 { return float64(in.State) }},
	{"vrrpd_priority", "Priority the instance currently advertises", gauge,
		func(in *Instance) float64 { return float64(in.Priority) }},
	{"vrrpd_base_priority", "Priority configured for the instance", gauge,
		func(in *Instance) float64 { return float64(in.BasePriority) }},
	{"vrrpd_transitions_total", "State changes of the instance since vrrpd started, FAULT included", counter,
		func(in *Instance) float64 { return float64(in.Transitions) }},
	{"vrrpd_last_transition_timestamp_seconds", "Unix time of the instance's latest state change (0 if none)", gauge,
		func(in *Instance) float64 {
			if in.LastTransition.IsZero() {
				return 0
			}
			return float64(in.LastTransition.UnixNano()) / 1e9
		}},
	{"vrrpd_vip_preexisting_total", "VIPs found on the interface already, not added by vrrpd, when the instance became master: left alone and never removed", counter,
		func(in *Instance) float64 { return float64(in.PreexistingVIPs) }},
	{"vrrpd_vip_readded_total", "VIPs taken off the interface by someone else while the instance was master, and put back", counter,
		func(in *Instance) float64 { return float64(in.ReaddedVIPs) }},
	{"vrrpd_advert_send_errors_total", "Advertisements the instance failed to send (the kernel refused them or the socket was unusable)", counter,
		func(in *Instance) float64 { return float64(in.SendErrors) }},
}

// The other families: one Desc each, written by Collect below.
var (
	upDesc        = prometheus.NewDesc("keepalived_up", "Status", nil, nil)
	vipMasterDesc = prometheus.NewDesc("vrrpd_vip_master",
		"1 for each VIP of an instance in MASTER state on this host, 0 for the other instances' VIPs: who holds an address, without a join", vipLabels, nil)
	// Only while another host answers: its MAC is a label, unknown before.
	vipConflictDesc = prometheus.NewDesc("vrrpd_vip_conflict",
		"1 for each VIP of an instance MASTER here that another host (mac) answers for too, while it does: two holders", conflictLabels, nil)
	instancesDesc = prometheus.NewDesc("vrrpd_instances", "Number of VRRP instances in each state", []string{"state"}, nil)
	receivedDesc  = prometheus.NewDesc("vrrpd_packets_received_total", "VRRP packets read from the interface's socket", socketLabels, nil)
	malformedDesc = prometheus.NewDesc("vrrpd_malformed_dropped_total",
		"VRRP packets dropped before reaching any instance (undecodable, broken IP header, unicast from a source not among the instance's peers)", socketLabels, nil)
	// Labelled per socket, not per VRID: a segment may carry up to 255 other routers
	// (and a hostile host can send all of them), which should not become 255 series per
	// node; which VRIDs they are is for a capture, the count is for an alert.
	otherVRIDDesc = prometheus.NewDesc("vrrpd_other_vrid_total",
		"VRRP packets for a VRID that no running instance here has: other virtual routers on the segment, normal on a shared wire", socketLabels, nil)
	// keepalived-exporter's name and meaning (1 while the script is good).
	scriptStatusDesc = prometheus.NewDesc("keepalived_script_status",
		"Tracker script status: 1 good, 0 failed, still in init or disabled", []string{"name"}, nil)
	scriptRunsDesc     = prometheus.NewDesc("vrrpd_script_runs_total", "Runs of the vrrp_script", []string{"name"}, nil)
	scriptFailuresDesc = prometheus.NewDesc("vrrpd_script_failures_total", "Runs of the vrrp_script that failed, timeouts included", []string{"name"}, nil)
	scriptTimeoutsDesc = prometheus.NewDesc("vrrpd_script_timeouts_total", "Runs of the vrrp_script killed at its timeout", []string{"name"}, nil)
	trackerOKDesc      = prometheus.NewDesc("vrrpd_tracker_ok",
		"1 while a tracked interface or file of the instance does not hold it in FAULT (an interface also needs to exist), else 0", trackerLabels, nil)
	trackerOffsetDesc = prometheus.NewDesc("vrrpd_tracker_priority_offset",
		"What a tracked interface or file adds to the instance's priority now", trackerLabels, nil)
	trackFileValueDesc = prometheus.NewDesc("vrrpd_track_file_value", "The number last read from a track_file", []string{"track_file"}, nil)
	syncGroupStateDesc = prometheus.NewDesc("vrrpd_sync_group_state",
		"State of the sync group as its hooks last heard it: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT, 4 STOP", []string{"group"}, nil)
)

// Collector is a prometheus.Collector that turns each scrape into one Snapshot read: the
// series are made from the snapshot at scrape time (const metrics), so nothing is kept
// between scrapes and an instance gone is a series gone.
type Collector struct {
	src    Source
	health func() error // keepalived_up's rule; nil means always up

	counters  []*prometheus.Desc // parallel to keepalivedCounters
	instances []*prometheus.Desc // parallel to instanceFamilies
}

// NewCollector returns a Collector reading src.
func NewCollector(src Source) *Collector {
	c := &Collector{src: src}
	for _, d := range keepalivedCounters {
		c.counters = append(c.counters, prometheus.NewDesc(d.name, d.help, vrrpLabels, nil))
	}
	for _, d := range instanceFamilies {
		c.instances = append(c.instances, prometheus.NewDesc(d.name, d.help, instanceLabels, nil))
	}
	return c
}

// Describe sends every family's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.counters {
		ch <- d
	}
	for _, d := range c.instances {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{upDesc, vipMasterDesc, vipConflictDesc, instancesDesc, receivedDesc, malformedDesc, otherVRIDDesc,
		scriptStatusDesc, scriptRunsDesc, scriptFailuresDesc, scriptTimeoutsDesc,
		trackerOKDesc, trackerOffsetDesc, trackFileValueDesc, syncGroupStateDesc} {
		ch <- d
	}
}

// allStates are reported in vrrpd_instances even when empty, so "no MASTER" is a 0, not a
// missing series.
var allStates = []vrrp.State{vrrp.StateInit, vrrp.StateBackup, vrrp.StateMaster, vrrp.StateFault}

var groupStates = map[string]float64{"INIT": 0, "BACKUP": 1, "MASTER": 2, "FAULT": 3, "STOP": 4}

// Collect reads one snapshot and sends its series. A series whose labels client_golang
// refuses (a name from a configuration file that is not valid UTF-8) is sent as an
// invalid metric: the handler (ContinueOnError) serves every other series and logs it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		m, err := prometheus.NewConstMetric(d, t, v, labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	// keepalived_exporter reported 0 when keepalived did not answer; vrrpd is this
	// process, so "answering" is not enough: up is the daemon's health (Options.Health).
	up := 1.0
	if c.health != nil && c.health() != nil {
		up = 0
	}
	emit(upDesc, gauge, up)

	snap := c.src.Snapshot()
	perState := make(map[vrrp.State]int, len(allStates))
	for i := range snap.Instances {
		in := &snap.Instances[i]
		vrid := strconv.Itoa(int(in.VRID))
		perState[in.State]++
		for j, d := range keepalivedCounters {
			emit(c.counters[j], counter, float64(d.value(&in.Counters)), in.Name, in.Interface, vrid, in.State.String())
		}
		for j, d := range instanceFamilies {
			emit(c.instances[j], d.typ, d.value(in), in.Name, in.Interface, vrid)
		}
		master := 0.0
		if in.State == vrrp.StateMaster {
			master = 1
		}
		for _, v := range in.VIPs {
			emit(vipMasterDesc, gauge, master, in.Name, in.Interface, vrid, v.Addr().String())
		}
		for _, tr := range in.Trackers {
			ok := 0.0
			if tr.OK {
				ok = 1
			}
			emit(trackerOKDesc, gauge, ok, in.Name, in.Interface, vrid, tr.Kind, tr.Name)
			emit(trackerOffsetDesc, gauge, float64(tr.Offset), in.Name, in.Interface, vrid, tr.Kind, tr.Name)
		}
	}
	for _, cf := range snap.Conflicts {
		emit(vipConflictDesc, gauge, 1, cf.Instance, cf.Interface, strconv.Itoa(int(cf.VRID)), cf.VIP.String(), cf.MAC)
	}
	for _, s := range allStates {
		emit(instancesDesc, gauge, float64(perState[s]), s.String())
	}
	for _, ifc := range snap.Interfaces {
		emit(receivedDesc, counter, float64(ifc.Received), ifc.Name, string(ifc.Family))
		emit(malformedDesc, counter, float64(ifc.Unattributed), ifc.Name, string(ifc.Family))
		emit(otherVRIDDesc, counter, float64(ifc.OtherVRID), ifc.Name, string(ifc.Family))
	}
	for _, sc := range snap.Scripts {
		good := 0.0
		if sc.Status == "GOOD" {
			good = 1
		}
		emit(scriptStatusDesc, gauge, good, sc.Name)
		emit(scriptRunsDesc, counter, float64(sc.Runs), sc.Name)
		emit(scriptFailuresDesc, counter, float64(sc.Failures), sc.Name)
		emit(scriptTimeoutsDesc, counter, float64(sc.Timeouts), sc.Name)
	}
	// A file tracked by several instances is one series, its latest value.
	files := map[string]int64{}
	var names []string
	for _, in := range snap.Instances {
		for _, tr := range in.Trackers {
			if tr.Kind != "file" {
				continue
			}
			if _, seen := files[tr.Name]; !seen {
				names = append(names, tr.Name)
			}
			files[tr.Name] = tr.Value
		}
	}
	for _, name := range names {
		emit(trackFileValueDesc, gauge, float64(files[name]), name)
	}
	for _, g := range snap.SyncGroups {
		emit(syncGroupStateDesc, gauge, groupStates[g.State], g.Name)
	}
}
