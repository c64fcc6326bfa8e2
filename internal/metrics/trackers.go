package metrics

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// This file is the tracked interfaces and files and the sync groups, in the metrics and
// in the status.

var groupStates = map[string]float64{"INIT": 0, "BACKUP": 1, "MASTER": 2, "FAULT": 3, "STOP": 4}

// collectTrackers adds the tracked interfaces' and files' and the sync groups'
// families to e.
func collectTrackers(e *exposition, snap Snapshot) {
	labels := []string{"name", "intf", "vrid", "kind", "tracked"}
	var (
		ok = e.family("vrrpd_tracker_ok", typeGauge,
			"1 while a tracked interface or file of the instance does not hold it in FAULT (an interface also needs to exist), else 0", labels...)
		offset = e.family("vrrpd_tracker_priority_offset", typeGauge,
			"What a tracked interface or file adds to the instance's priority now", labels...)
		fileValue = e.family("vrrpd_track_file_value", typeGauge,
			"The number last read from a track_file", "track_file")
		group = e.family("vrrpd_sync_group_state", typeGauge,
			"State of the sync group as its hooks last heard it: 0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT, 4 STOP", "group")
	)
	files := map[string]int64{}
	var names []string
	for _, in := range snap.Instances {
		vrid := strconv.Itoa(int(in.VRID))
		for _, tr := range in.Trackers {
			good := 0.0
			if tr.OK {
				good = 1
			}
			ok.add(good, in.Name, in.Interface, vrid, tr.Kind, tr.Name)
			offset.add(float64(tr.Offset), in.Name, in.Interface, vrid, tr.Kind, tr.Name)
			if tr.Kind == "file" {
				if _, seen := files[tr.Name]; !seen {
					names = append(names, tr.Name)
				}
				files[tr.Name] = tr.Value
			}
		}
	}
	for _, name := range names {
		fileValue.add(float64(files[name]), name)
	}
	for _, g := range snap.SyncGroups {
		group.add(groupStates[g.State], g.Name)
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
