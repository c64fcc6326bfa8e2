package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// Status is the JSON document served at StatusPath and printed by `vrrpd status`. Its
// field names are a stable interface: add fields, never rename them.
type Status struct {
	Instances  []InstanceStatus  `json:"instances"`
	Interfaces []InterfaceStatus `json:"interfaces,omitempty"`
	Scripts    []ScriptStatus    `json:"scripts,omitempty"`
	SyncGroups []SyncGroupStatus `json:"sync_groups,omitempty"`
	// Conflicts are the VIPs a MASTER here holds that another host answers for too.
	Conflicts []ConflictStatus `json:"conflicts,omitempty"`
}

// ConflictStatus is one VIP another host (MAC) answers for too, in Status.
type ConflictStatus struct {
	Instance string    `json:"instance"`
	VIP      string    `json:"vip"`
	MAC      string    `json:"mac"`
	Since    time.Time `json:"since,omitzero"`
}

// ScriptStatus is one vrrp_script in Status.
type ScriptStatus struct {
	Name     string `json:"name"`
	Status   string `json:"status"` // INIT, GOOD, FAILED, DISABLED
	Runs     uint64 `json:"runs"`
	Failures uint64 `json:"failures"`
	Timeouts uint64 `json:"timeouts"`
}

// TrackedStatus is one tracked script of an instance in Status.
type TrackedStatus struct {
	Script  string `json:"script"`
	Weight  int    `json:"weight"`
	Reverse bool   `json:"reverse,omitempty"`
	Status  string `json:"status"`
}

// InstanceStatus is one instance in Status.
type InstanceStatus struct {
	Name           string    `json:"name"`
	Interface      string    `json:"interface"`
	Family         Family    `json:"family"`
	VRID           uint8     `json:"vrid"`
	Version        int       `json:"version"`
	State          string    `json:"state"` // INIT, BACKUP, MASTER, FAULT
	Priority       uint8     `json:"priority"`
	BasePriority   uint8     `json:"base_priority"`
	Master         string    `json:"master,omitempty"`
	VIPs           []string  `json:"vips"`
	Transitions    uint64    `json:"transitions"`
	LastTransition time.Time `json:"last_transition,omitzero"`
	// Counters uses keepalived's statistic names (advert_rcvd, ...).
	Counters map[string]uint64 `json:"counters"`
	// TrackScripts are the scripts it tracks; Priority is the effective priority they
	// make of BasePriority.
	TrackScripts []TrackedStatus `json:"track_scripts,omitempty"`
	// Trackers are its tracked interfaces and files (trackers.go), SyncGroup its group.
	Trackers  []TrackerStatus `json:"trackers,omitempty"`
	SyncGroup string          `json:"sync_group,omitempty"`
}

// InterfaceStatus is one socket in Status.
type InterfaceStatus struct {
	Name         string `json:"name"`
	Family       Family `json:"family"`
	Received     uint64 `json:"received"`
	Unattributed uint64 `json:"unattributed"`
	OtherVRID    uint64 `json:"other_vrid"`
}

// NewStatus converts a snapshot into its JSON form, instances sorted by interface, VRID
// and family so that the output is stable.
func NewStatus(s Snapshot) Status {
	st := Status{Instances: make([]InstanceStatus, 0, len(s.Instances))}
	for _, in := range s.Instances {
		is := InstanceStatus{
			Name:           in.Name,
			Interface:      in.Interface,
			Family:         in.Family,
			VRID:           in.VRID,
			Version:        in.Version,
			State:          in.State.String(),
			Priority:       in.Priority,
			BasePriority:   in.BasePriority,
			VIPs:           make([]string, 0, len(in.VIPs)),
			Transitions:    in.Transitions,
			LastTransition: in.LastTransition,
			Counters:       countersMap(&in.Counters),
		}
		if in.Master.IsValid() {
			is.Master = in.Master.String()
		}
		for _, v := range in.VIPs {
			is.VIPs = append(is.VIPs, v.String())
		}
		for _, t := range in.Tracked {
			is.TrackScripts = append(is.TrackScripts, TrackedStatus(t))
		}
		is.Trackers, is.SyncGroup = trackerStatuses(in.Trackers), in.SyncGroup
		st.Instances = append(st.Instances, is)
	}
	sort.SliceStable(st.Instances, func(i, j int) bool {
		a, b := &st.Instances[i], &st.Instances[j]
		if a.Interface != b.Interface {
			return a.Interface < b.Interface
		}
		if a.VRID != b.VRID {
			return a.VRID < b.VRID
		}
		return a.Family < b.Family
	})
	for _, ifc := range s.Interfaces {
		st.Interfaces = append(st.Interfaces, InterfaceStatus(ifc))
	}
	for _, sc := range s.Scripts {
		st.Scripts = append(st.Scripts, ScriptStatus(sc))
	}
	for _, g := range s.SyncGroups {
		st.SyncGroups = append(st.SyncGroups, SyncGroupStatus(g))
	}
	for _, c := range s.Conflicts {
		st.Conflicts = append(st.Conflicts, ConflictStatus{Instance: c.Instance, VIP: c.VIP.String(), MAC: c.MAC, Since: c.Since})
	}
	return st
}

// countersMap names each counter after its metric without the keepalived_vrrp_ / vrrpd_
// prefix, so the JSON and the metrics agree.
func countersMap(c *vrrp.Counters) map[string]uint64 {
	m := make(map[string]uint64, len(keepalivedCounters))
	for _, d := range keepalivedCounters {
		name := strings.TrimPrefix(strings.TrimPrefix(d.name, "keepalived_vrrp_"), "vrrpd_")
		m[name] = d.value(c)
	}
	return m
}

// DialFunc makes a connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// client is a net/http client for one request to vrrpd's own endpoints: no proxy (the
// environment's proxy must not see a local daemon's status), no connection kept, bounded
// answer headers. dial nil means a net.Dialer.
func client(dial DialFunc) *http.Client {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:            dial,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// GetStatus fetches and decodes the Status of the daemon whose HTTP endpoint is baseURL
// (e.g. "http://127.0.0.1:9650"). dial nil means a net.Dialer.
func GetStatus(ctx context.Context, dial DialFunc, baseURL string) (Status, error) {
	rawURL := strings.TrimSuffix(baseURL, "/") + StatusPath
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return Status{}, fmt.Errorf("status: %q is not an http:// URL", baseURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	req.Header.Set("User-Agent", "vrrpd-status")
	resp, err := client(dial).Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return Status{}, fmt.Errorf("status: is vrrpd running? %w", err)
		}
		return Status{}, fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Status{}, fmt.Errorf("status: %s answered %s: %s", rawURL, resp.Status, strings.TrimSpace(string(body)))
	}
	var st Status
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&st); err != nil {
		return Status{}, fmt.Errorf("status: decode answer of %s: %w", rawURL, err)
	}
	return st, nil
}

// Probe asks the daemon's probe socket (a Unix socket, see NewProbeServer) for path
// (LivePath, ReadyPath or HealthPath): nil when it answers 200, else the answer or the
// failure to get one.
func Probe(ctx context.Context, socket, path string) error {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
	// The host name is only the Host header: the connection goes to the socket.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://vrrpd"+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "vrrpd-probe")
	resp, err := client(dial).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// WriteTable prints the status as a table, one line per instance, the way `vrrpd status`
// shows it.
func (s Status) WriteTable(w io.Writer) error {
	tw := table(w, "NAME\tINTERFACE\tFAMILY\tVRID\tSTATE\tPRIORITY\tMASTER\tVIPS")
	for _, in := range s.Instances {
		master := in.Master
		if master == "" {
			master = "-"
		}
		vips := strings.Join(in.VIPs, ",")
		if vips == "" {
			vips = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n",
			in.Name, in.Interface, in.Family, in.VRID, in.State, in.Priority, master, vips)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := s.writeTracking(w); err != nil {
		return err
	}
	if err := s.writeTrackers(w); err != nil {
		return err
	}
	return s.writeConflicts(w)
}

// writeConflicts prints, when there are any, the VIPs another host answers for too.
func (s Status) writeConflicts(w io.Writer) error {
	if len(s.Conflicts) == 0 {
		return nil
	}
	tw := table(w, "\nINSTANCE\tVIP\tALSO ANSWERED BY\tSINCE")
	for _, c := range s.Conflicts {
		since := "-"
		if !c.Since.IsZero() {
			since = c.Since.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Instance, c.VIP, c.MAC, since)
	}
	return tw.Flush()
}

// writeTracking prints, when any instance tracks scripts, each tracked script with its
// status and the weight it applies, and each script's runs.
func (s Status) writeTracking(w io.Writer) error {
	if len(s.Scripts) == 0 {
		return nil
	}
	tw := table(w, "\nINSTANCE\tBASE\tEFFECTIVE\tSCRIPT\tWEIGHT\tSTATUS")
	for _, in := range s.Instances {
		for _, t := range in.TrackScripts {
			weight := strconv.Itoa(t.Weight)
			if t.Reverse {
				weight += " reverse"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", in.Name, in.BasePriority, in.Priority, t.Script, weight, t.Status)
		}
	}
	fmt.Fprintln(tw, "\nSCRIPT\tSTATUS\tRUNS\tFAILURES\tTIMEOUTS")
	for _, sc := range s.Scripts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", sc.Name, sc.Status, sc.Runs, sc.Failures, sc.Timeouts)
	}
	return tw.Flush()
}

// table starts one of the status tables: columns two spaces apart, header first.
func table(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}
