package metrics_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/metrics"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

func trackerSnapshot() metrics.Snapshot {
	return metrics.Snapshot{
		Instances: []metrics.Instance{{
			Name: "VI_1", Interface: "eth0", VRID: 51, State: vrrp.StateFault, Priority: 120, BasePriority: 150, SyncGroup: "G",
			Trackers: []metrics.Tracker{
				{Kind: "interface", Name: "eth1", Status: "DOWN", OK: false},
				{Kind: "file", Name: "prio", Weight: -10, Status: "OK", OK: true, Offset: -30, Value: 3},
			},
		}},
		SyncGroups: []metrics.SyncGroup{{Name: "G", State: "FAULT", Members: []string{"VI_1", "VI_2"}}},
	}
}

// Tracked interfaces and files and sync groups reach the metrics, /status and the table.
func TestTrackerMetricsAndStatus(t *testing.T) {
	mfs := gather(t, metrics.SourceFunc(trackerSnapshot))
	lbl := func(kind, name string) map[string]string {
		return map[string]string{"name": "VI_1", "intf": "eth0", "vrid": "51", "kind": kind, "tracked": name}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"vrrpd_tracker_ok", lbl("interface", "eth1"), 0},
		{"vrrpd_tracker_ok", lbl("file", "prio"), 1},
		{"vrrpd_tracker_priority_offset", lbl("file", "prio"), -30},
		{"vrrpd_track_file_value", map[string]string{"track_file": "prio"}, 3},
		{"vrrpd_sync_group_state", map[string]string{"group": "G"}, 3},
	} {
		if v, ok := value(t, mfs, c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	st := metrics.NewStatus(trackerSnapshot())
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"trackers":[{"kind":"interface","name":"eth1","weight":0,"status":"DOWN","offset":0}`,
		`"value":3`, `"sync_group":"G"`, `"sync_groups":[{"name":"G","state":"FAULT","members":["VI_1","VI_2"]}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/status %s lacks %s", b, want)
		}
	}
	var buf bytes.Buffer
	if err := st.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"interface eth1", "file prio=3", "SYNC GROUP", "G           FAULT"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}
