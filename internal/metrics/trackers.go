package metrics

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
)

// This file is the tracked interfaces and files and the sync groups, in the metrics and
// in the status.

// trackerMetrics are their metric descriptions.
type trackerMetrics struct {
	ok, offset, fileValue, group *prometheus.Desc
}

func newTrackerMetrics() trackerMetrics {
	labels := []string{"name", "intf", "vrid", "kind", "tracked"}
	return trackerMetrics{
		ok: prometheus.NewDesc("vrrpd_tracker_ok",
			"1 while a tracked interface or file of the instance does not hold it in FAULT (an interface also needs to exist), else 0", labels, nil),
		offset: prometheus.NewDesc("vrrpd_tracker_priority_offset",
			"What a tracked interface or file adds to the instance's priority now", labels, nil),
		fileValue: prometheus.NewDesc("vrrpd_track_file_value",
			"The number last read from a track_file", []string{"track_file"}, nil),
		group: prometheus.NewDesc("vrrpd_sync_group_state",
			"State of the sync group as its hooks last heard it: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT, 4 STOP", []string{"group"}, nil),
	}
}

func (t trackerMetrics) describe(ch chan<- *prometheus.Desc) {
	ch <- t.ok
	ch <- t.offset
	ch <- t.fileValue
	ch <- t.group
}

var groupStates = map[string]float64{"INIT": 0, "BACKUP": 1, "MASTER": 2, "FAULT": 3, "STOP": 4}

func (t trackerMetrics) collect(ch chan<- prometheus.Metric, snap Snapshot) {
	files := map[string]int64{}
	for _, in := range snap.Instances {
		vrid := strconv.Itoa(int(in.VRID))
		for _, tr := range in.Trackers {
			ok := 0.0
			if tr.OK {
				ok = 1
			}
			emit(ch, t.ok, prometheus.GaugeValue, ok, in.Name, in.Interface, vrid, tr.Kind, tr.Name)
			emit(ch, t.offset, prometheus.GaugeValue, float64(tr.Offset), in.Name, in.Interface, vrid, tr.Kind, tr.Name)
			if tr.Kind == "file" {
				files[tr.Name] = tr.Value
			}
		}
	}
	for name, v := range files {
		emit(ch, t.fileValue, prometheus.GaugeValue, float64(v), name)
	}
	for _, g := range snap.SyncGroups {
		emit(ch, t.group, prometheus.GaugeValue, groupStates[g.State], g.Name)
	}
}

// TrackerStatus is one tracked interface or file of an instance in Status.
type TrackerStatus struct {
	Kind    string `json:"kind"` // interface or file
	Name    string `json:"name"`
	Weight  int    `json:"weight"`
	Reverse bool   `json:"reverse,omitempty"`
	Status  string `json:"status"` // UP, DOWN, UNTRACKED; OK, FAULT
	Offset  int    `json:"offset"`
	Value   *int64 `json:"value,omitempty"` // a file's number
}

// SyncGroupStatus is one sync group in Status.
type SyncGroupStatus struct {
	Name    string   `json:"name"`
	State   string   `json:"state"`
	Members []string `json:"members"`
}

func trackerStatuses(ts []Tracker) []TrackerStatus {
	var out []TrackerStatus
	for _, t := range ts {
		s := TrackerStatus{Kind: t.Kind, Name: t.Name, Weight: t.Weight, Reverse: t.Reverse, Status: t.Status, Offset: t.Offset}
		if t.Kind == "file" {
			v := t.Value
			s.Value = &v
		}
		out = append(out, s)
	}
	return out
}

// writeTrackers prints the tracked interfaces and files and the sync groups, when there
// are any.
func (s Status) writeTrackers(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := false
	for _, in := range s.Instances {
		for _, t := range in.Trackers {
			if !header {
				fmt.Fprintln(tw, "\nINSTANCE\tBASE\tEFFECTIVE\tTRACKS\tWEIGHT\tSTATUS\tOFFSET")
				header = true
			}
			weight := strconv.Itoa(t.Weight)
			if t.Reverse {
				weight += " reverse"
			}
			what := t.Kind + " " + t.Name
			if t.Value != nil {
				what += "=" + strconv.FormatInt(*t.Value, 10)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%d\n", in.Name, in.BasePriority, in.Priority, what, weight, t.Status, t.Offset)
		}
	}
	if len(s.SyncGroups) > 0 {
		fmt.Fprintln(tw, "\nSYNC GROUP\tSTATE\tMEMBERS")
		for _, g := range s.SyncGroups {
			fmt.Fprintf(tw, "%s\t%s\t%v\n", g.Name, g.State, g.Members)
		}
	}
	return tw.Flush()
}
