package metrics

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// This file is the tracked interfaces and files and the sync groups in the status (their
// metrics are in collector.go).

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
